"""The HTML pages: one module per page family, their forms, routes and template filters.

Pages are a door, like the JSON API beside them (``jaato_web.api``): they parse a request,
call a service or a selector of the apps below (``dashboard``, ``teams``, ``review``), shape
the answer with a presenter and render it. No rule lives here.
"""
