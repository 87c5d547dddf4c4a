"""Live preview: what the agent wrote (HTML outputs) or started (a server in the sandbox), shown
to the thread's owner without ever running on the gateway's own origin.

- ``files.py``: a file of the thread's outputs or workspace, opened race-free, with its type;
- ``tokens.py``: the short-lived signed tokens that authorize a preview link;
- ``policy.py``: the headers (Content-Security-Policy and the rest) of preview answers;
- ``ports.py``: relaying HTTP to a server listening inside the thread's sandbox;
- ``origin.py``: the preview origin, a second listener serving only preview content.

The gateway's routes for it are in ``routes/preview.py``.
"""
