"""Fixtures for channel tests: fake platform servers and a gateway whose channels use them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.channels.fake_bark import FakeBark
from tests.channels.fake_dingtalk import FakeDingTalk
from tests.channels.fake_discord import FakeDiscord
from tests.channels.fake_feishu import FakeFeishu
from tests.channels.fake_server import serving
from tests.channels.fake_slack import FakeSlack
from tests.channels.fake_telegram import FakeTelegram
from tests.channels.fake_wecom import FakeWeCom
from tests.channels.fake_whatsapp import FakeWhatsApp
from tests.gateway.gateway_support import HeldModel, scripted_model


@pytest.fixture
def model() -> Iterator[HeldModel]:
    """The scripted agent behind the channels; released at the end so no run stays held."""
    held = scripted_model()
    yield held
    held.release()


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    """A fake Telegram Bot API on a loopback port."""
    with serving(FakeTelegram()) as fake:
        yield fake


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    """A fake Slack Web API on a loopback port."""
    with serving(FakeSlack()) as fake:
        yield fake


@pytest.fixture
def feishu() -> Iterator[FakeFeishu]:
    """A fake Feishu Open API on a loopback port."""
    with serving(FakeFeishu()) as fake:
        yield fake


@pytest.fixture
def discord_api() -> Iterator[FakeDiscord]:
    """A fake Discord REST API and gateway on a loopback port."""
    with serving(FakeDiscord()) as fake:
        yield fake


@pytest.fixture
def wecom() -> Iterator[FakeWeCom]:
    """A fake WeCom API on a loopback port."""
    with serving(FakeWeCom()) as fake:
        yield fake


@pytest.fixture
def whatsapp() -> Iterator[FakeWhatsApp]:
    """A fake WhatsApp Cloud API on a loopback port."""
    with serving(FakeWhatsApp()) as fake:
        yield fake


@pytest.fixture
def dingtalk() -> Iterator[FakeDingTalk]:
    """A fake DingTalk (stream gateway and APIs) on a loopback port."""
    with serving(FakeDingTalk()) as fake:
        yield fake


@pytest.fixture
def bark() -> Iterator[FakeBark]:
    """A fake Bark server on a loopback port."""
    with serving(FakeBark()) as fake:
        yield fake
