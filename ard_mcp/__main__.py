from ard_mcp.entry import main

raise SystemExit(main())
