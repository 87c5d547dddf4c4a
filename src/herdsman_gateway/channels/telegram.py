"""Telegram through python-telegram-bot: long polling (``getUpdates``) or a webhook.

In polling mode the bot asks Telegram for updates itself; in webhook mode Telegram POSTs them
to ``/channels/telegram/webhook`` (register that URL with ``setWebhook``, giving the same
``secret_token`` as ``channels.telegram.webhook_secret``). Either way each text message goes
to the dispatcher; answers are ``sendMessage`` and files ``sendDocument``.
"""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from telegram import Update
from telegram.ext import Application, ApplicationBuilder, ContextTypes, filters
from telegram.ext import MessageHandler as TgMessageHandler

from herdsman.config.schema import TelegramChannelConfig
from herdsman.logs import get_logger
from herdsman_gateway.channels.base import Channel, InboundMessage, MessageHandler

log = get_logger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


class TelegramChannel(Channel):
    """A Telegram bot answering in the chats that write to it."""

    name = "telegram"

    def __init__(self, config: TelegramChannelConfig) -> None:
        super().__init__()
        self.config = config
        self.app: Application | None = None

    @property
    def max_text(self) -> int:
        """Telegram's limit is 4096 characters a message."""
        return 4096

    def build_application(self) -> Application:
        """The python-telegram-bot application, pointed at ``base_url`` when configured."""
        builder = ApplicationBuilder().token(self.config.bot_token or "")
        if self.config.base_url:
            builder = builder.base_url(self.config.base_url)
        if self.config.base_file_url:
            builder = builder.base_file_url(self.config.base_file_url)
        if self.config.mode == "webhook":
            builder = builder.updater(None)
        app = builder.build()
        app.add_handler(TgMessageHandler(filters.TEXT, self._on_update))
        app.add_error_handler(self._on_error)
        return app

    async def start(self, handler: MessageHandler) -> None:
        """Log in (``getMe``) and, in polling mode, start polling."""
        self.handler = handler
        app = self.build_application()
        await app.initialize()
        await app.start()
        if app.updater is not None:
            await app.updater.start_polling(
                timeout=self.config.poll_timeout_seconds, error_callback=self._on_polling_error
            )
        self.app = app
        log.info("telegram_connected", bot=app.bot.username, mode=self.config.mode)

    async def stop(self) -> None:
        """Stop polling and the application."""
        app, self.app = self.app, None
        self.handler = None
        if app is None:
            return
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        await app.stop()
        await app.shutdown()

    async def _on_update(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A text message: hand it to the dispatcher."""
        msg, user = update.effective_message, update.effective_user
        if msg is None or user is None or self.handler is None or not msg.text:
            return
        inbound = InboundMessage(
            channel=self.name,
            chat_id=str(msg.chat_id),
            user_id=str(user.id),
            user_name=user.username,
            text=msg.text,
        )
        await self.handler.handle(self, inbound)

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Errors of update handlers: logged, the bot goes on."""
        log.warning("telegram_handler_failed", error=f"{type(context.error).__name__}: {context.error}")

    def _on_polling_error(self, error: Exception) -> None:
        """getUpdates failed (network, API error): logged; python-telegram-bot retries."""
        log.warning("telegram_polling_failed", error=f"{type(error).__name__}: {error}")

    def _bot(self) -> Any:
        if self.app is None:
            raise RuntimeError("the telegram channel is not started")
        return self.app.bot

    async def send_text(self, chat_id: str, text: str, *, reply_to: str | None = None) -> None:
        """``sendMessage`` to the chat."""
        await self._bot().send_message(chat_id=int(chat_id), text=text)

    async def send_file(self, chat_id: str, filename: str, data: bytes, *, reply_to: str | None = None) -> None:
        """``sendDocument`` to the chat."""
        await self._bot().send_document(chat_id=int(chat_id), document=data, filename=filename)

    def router(self) -> APIRouter | None:
        """``POST /webhook`` in webhook mode."""
        if self.config.mode != "webhook":
            return None
        router = APIRouter()

        @router.post("/webhook", summary="Telegram webhook")
        async def telegram_webhook(request: Request) -> JSONResponse:
            """An update from Telegram; 403 with a wrong secret, 400 when it is not an update."""
            return await self.receive(request)

        return router

    async def receive(self, request: Request) -> JSONResponse:
        """Check, parse and queue one webhook update."""
        secret = self.config.webhook_secret
        if secret and not hmac.compare_digest(request.headers.get(SECRET_HEADER, ""), secret):
            log.warning("telegram_webhook_refused", reason="bad secret token")
            return JSONResponse({"detail": f"wrong or missing {SECRET_HEADER}"}, status_code=403)
        app = self.app
        if app is None:
            return JSONResponse({"detail": "the telegram channel is not running; try again later"}, status_code=503)
        try:
            data = await request.json()
            if not isinstance(data, dict) or "update_id" not in data:
                raise ValueError("a Telegram update is a JSON object with update_id")
            update = Update.de_json(data, app.bot)
        except Exception as exc:  # noqa: BLE001 - any parse failure is the sender's fault
            log.warning("telegram_webhook_malformed", error=str(exc))
            return JSONResponse({"detail": f"malformed Telegram update: {exc}"}, status_code=400)
        await app.update_queue.put(update)
        return JSONResponse({"ok": True})
