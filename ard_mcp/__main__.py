from ard_mcp.surfaces.cli import main

raise SystemExit(main())
