"""A Flask site with a ToolServer's MCP endpoint mounted at /mcp next to its own route, the
way Flask mounts a WSGI app: werkzeug's DispatcherMiddleware around ``app.wsgi_app``.

    gunicorn 'serve.sites.flask_site:app'      python -m waitress serve.sites.flask_site:app
"""
from flask import Flask
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from raider_sync.serve.serving_http import wsgi_app

from serve.sites.site_tools import site_tools

app = Flask(__name__)


@app.get("/hello")
def hello() -> str:
    return "hello from flask"


# fewer long-lived streams than the server has threads (8), so calls are never starved; a
# comment on a silent stream every second, so that gunicorn (which does not tell an app that
# a client went) finds the streams of the clients gone within a second, and stops as soon
mcp_app = wsgi_app(site_tools(), path="/", max_streams=4, keepalive=1.0)
app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {"/mcp": mcp_app})
