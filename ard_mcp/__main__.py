from ard_mcp.cli import main

raise SystemExit(main())
