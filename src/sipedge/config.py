"""One typed settings object: config/sipedge.toml, overridden by SIPEDGE_<SECTION>__<KEY>.

Loaded once by the CLI and passed down; nothing below the CLI reads the environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from sipedge.sip.limits import Limits

DEFAULT_CONFIG_FILE = Path("config/sipedge.toml")
CONFIG_FILE_ENV = "SIPEDGE_CONFIG"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatabaseSettings(_Section):
    url: str = "sqlite:///./sipedge.db"
    echo: bool = False
    auto_migrate: bool = True


class HttpSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    rate_limit_per_minute: int = Field(default=600, ge=0)
    token_cache_seconds: float = Field(default=2.0, ge=0, le=60)


class SipSettings(_Section):
    host: str = "0.0.0.0"
    port: int = Field(default=5060, ge=1, le=65535)
    advertised_address: str = ""
    max_message_bytes: int = Field(default=65_536, ge=1024, le=1_048_576)
    udp_receive_buffer: int = Field(default=4_194_304, ge=65_536)
    t1: float = Field(default=0.5, gt=0)
    t2: float = Field(default=4.0, gt=0)
    t4: float = Field(default=5.0, gt=0)
    tcp_idle_timeout: float = Field(default=300.0, gt=0)
    tcp_max_connections: int = Field(default=4096, ge=1)
    tcp_max_connections_per_peer: int = Field(default=16, ge=1)
    max_call_duration: float = Field(default=14_400.0, gt=0)
    max_headers: int = Field(default=256, ge=16)
    max_header_line_length: int = Field(default=8192, ge=256)
    max_via_depth: int = Field(default=100, ge=2)
    max_body_bytes: int = Field(default=32_768, ge=0)
    max_transactions: int = Field(default=100_000, ge=1)
    max_dialogs: int = Field(default=50_000, ge=1)

    def limits(self) -> Limits:
        """The parser's hard limits (``sip.limits.Limits``) from these settings."""
        return Limits(
            max_message_bytes=self.max_message_bytes,
            max_headers=self.max_headers,
            max_header_line_length=self.max_header_line_length,
            max_via_depth=self.max_via_depth,
            max_body_bytes=self.max_body_bytes,
        )


class FloodSettings(_Section):
    """Field names equal ``edge.flood.FloodConfig``'s: ``FloodConfig(**flood.model_dump())``."""

    enabled: bool = True
    window_seconds: float = Field(default=1.0, gt=0)
    carrier_rate: int = Field(default=2000, ge=0)
    unknown_rate: int = Field(default=20, ge=0)
    ban_after_windows: int = Field(default=3, ge=1)
    ban_seconds: float = Field(default=60.0, ge=0)
    invite_rate: int = Field(default=400, ge=0)
    retry_after_seconds: int = Field(default=5, ge=1)
    max_tracked_sources: int = Field(default=100_000, ge=2)


class AgentsSettings(_Section):
    endpoint: str = "sip:127.0.0.1:5090"
    ring_timeout_seconds: float = Field(default=180.0, gt=0)
    bridge_answer_timeout_seconds: float = Field(default=15.0, gt=0)


class OutboundSettings(_Section):
    """The dialer of `POST /call` calls (see runtime/dialer.py)."""

    poll_interval_seconds: float = Field(default=1.0, gt=0)
    ring_timeout_seconds: float = Field(default=120.0, gt=0)
    heartbeat_seconds: float = Field(default=10.0, gt=0)


class SecuritySettings(_Section):
    unknown_source: Literal["drop", "reject"] = "drop"
    allow_private_gateways: bool = False
    allow_private_webhooks: bool = False


class WebhooksSettings(_Section):
    """Call status webhook delivery (see runtime/webhook_sender.py)."""

    timeout_seconds: float = Field(default=5.0, gt=0)
    backoff_base_seconds: float = Field(default=2.0, gt=0)
    backoff_max_seconds: float = Field(default=600.0, gt=0)
    give_up_after_seconds: float = Field(default=86_400.0, gt=0)
    poll_interval_seconds: float = Field(default=1.0, gt=0)
    batch_size: int = Field(default=50, ge=1, le=1000)
    lease_seconds: float = Field(default=60.0, gt=0)
    retention_days: float = Field(default=7.0, gt=0)
    source_address: str = ""


class RedisSettings(_Section):
    """Cluster-wide channel counts (SPEC §7; see runtime/cluster_channels.py)."""

    url: str = ""
    lease_seconds: float = Field(default=60.0, ge=3)
    timeout_seconds: float = Field(default=0.5, gt=0)


class LoggingSettings(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class Settings(BaseSettings):
    """Every setting of sipedge; see config/sipedge.toml for the documented defaults."""

    model_config = SettingsConfigDict(
        env_prefix="SIPEDGE_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    database: DatabaseSettings = DatabaseSettings()
    http: HttpSettings = HttpSettings()
    sip: SipSettings = SipSettings()
    flood: FloodSettings = FloodSettings()
    agents: AgentsSettings = AgentsSettings()
    outbound: OutboundSettings = OutboundSettings()
    security: SecuritySettings = SecuritySettings()
    webhooks: WebhooksSettings = WebhooksSettings()
    redis: RedisSettings = RedisSettings()
    logging: LoggingSettings = LoggingSettings()

    @field_validator("database")
    @classmethod
    def _known_database(cls, value: DatabaseSettings) -> DatabaseSettings:
        scheme = value.url.split(":", 1)[0].split("+", 1)[0]
        if scheme not in {"sqlite", "postgresql", "postgres"}:
            raise ValueError("database.url must be a sqlite:// or postgresql:// URL")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Precedence: explicit arguments > SIPEDGE_* environment > the TOML file > defaults.
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))

    @property
    def sip_advertised_address(self) -> str:
        return self.sip.advertised_address or self.sip.host


def load_settings(config_file: Path | None = None, **overrides: object) -> Settings:
    """Build the settings: explicit overrides > environment > TOML file > defaults.

    The TOML file is `config_file`, else $SIPEDGE_CONFIG, else ./config/sipedge.toml if present.
    """
    path = config_file
    if path is None and os.environ.get(CONFIG_FILE_ENV):
        path = Path(os.environ[CONFIG_FILE_ENV])
    if path is None and DEFAULT_CONFIG_FILE.is_file():
        path = DEFAULT_CONFIG_FILE
    if path is None:
        return Settings(**overrides)  # type: ignore[arg-type]
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    from_file = type(
        "Settings", (Settings,), {"model_config": {**Settings.model_config, "toml_file": path}}
    )
    settings: Settings = from_file(**overrides)
    return settings
