"""Where the surfaces and the web page are put together: the HTTP app (MCP, the three REST surfaces and the
page over one registry) and the command line that serves it. Above both, so neither imports the other."""
