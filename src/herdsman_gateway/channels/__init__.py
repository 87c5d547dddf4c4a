"""IM channels: Telegram, Slack, Feishu/Lark and Discord in front of the gateway's run manager.

- ``base.py``: the :class:`Channel` interface each platform implements, and ``InboundMessage``;
- ``telegram.py``, ``slack.py``, ``feishu.py``, ``discord.py``: one platform each, on its
  official client library;
- ``dispatcher.py``: allowed users, commands, runs, progress, answers and files for every channel;
- ``commands.py``: ``/new``, ``/status``, ``/cancel``, ``/help`` parsing;
- ``progress.py``: run events as short progress notes, and their throttle;
- ``threads.py``: the persistent chat -> thread map;
- ``manager.py``: starts the configured channels with the app, mounts webhooks, ``GET /api/channels``.
"""
