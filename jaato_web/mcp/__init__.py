"""The agent tools over MCP, at ``/mcp`` beside the pages and the API.

A door like the pages and the API: the tools (``gcengine.mcp_tools``) act on the dashboard
through ``store.DashboardStore``, which reaches objects through the caller's API token and the
permission table and changes them only through the services. ``http`` authenticates the
token and checks the Host and Origin headers; ``jaato_web.asgi`` mounts it all.
"""
