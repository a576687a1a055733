from ard_mcp.assembly.cli import main

raise SystemExit(main())
