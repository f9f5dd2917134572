"""SDP offer/answer model (RFC 4566, RFC 3264) and the codec-filter rewrite.

The model keeps every line of the body exactly as received (text and line ending), so a description
that is parsed and serialised again is byte-identical, and a rewrite touches only the lines it means
to change: the audio ``m=`` line and the ``a=rtpmap``/``a=fmtp``/``a=rtcp-fb`` lines of the payload
types it removes. Everything else (``o=``, ``c=``, ``a=ptime``, ICE, crypto, unknown lines) is left
alone, because a B2BUA that rewrites what it does not understand breaks calls in ways nobody can
debug.

Bytes that are not UTF-8 are carried through with ``surrogateescape``: SDP allows other charsets in
``s=``/``i=`` (``a=charset``) and we must not choke on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sipedge.sip.errors import SipParseError

__all__ = [
    "MediaDescription",
    "RtpMap",
    "SdpError",
    "SdpLine",
    "SessionDescription",
    "build_offer",
    "filter_audio_codecs",
    "offer_fits",
]

TELEPHONE_EVENT = "telephone-event"

# RFC 3551 §6, table 4: static audio payload types that may appear without an a=rtpmap line.
_STATIC_AUDIO: dict[int, tuple[str, int]] = {
    0: ("PCMU", 8000),
    3: ("GSM", 8000),
    4: ("G723", 8000),
    5: ("DVI4", 8000),
    6: ("DVI4", 16000),
    7: ("LPC", 8000),
    8: ("PCMA", 8000),
    9: ("G722", 8000),  # RTP clock is 8000 although the codec samples at 16 kHz (RFC 3551 §4.5.2)
    10: ("L16", 44100),
    11: ("L16", 44100),
    12: ("QCELP", 8000),
    13: ("CN", 8000),
    14: ("MPA", 90000),
    15: ("G728", 8000),
    16: ("DVI4", 11025),
    17: ("DVI4", 22050),
    18: ("G729", 8000),
}


class SdpError(SipParseError, ValueError):
    """The body is not a usable session description.

    Defaults to 400 (a malformed body, RFC 3261 §21.4.1); a caller that prefers 488 answers that.
    The reason is a fixed phrase and never echoes the body.
    """

    def __init__(self, reason: str, status: int | None = 400) -> None:
        super().__init__(reason, status)


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class SdpLine:
    """One ``<type>=<value>`` line; ``eol`` is the terminator it had ("\\r\\n", "\\n" or "")."""

    type: str
    value: str
    eol: str = "\r\n"

    def __str__(self) -> str:
        # A blank line (tolerated, never produced) has an empty type and no "=".
        return f"{self.type}={self.value}{self.eol}" if self.type else self.eol


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class RtpMap:
    """``a=rtpmap:<pt> <encoding>/<clock>[/<channels>]`` (RFC 4566 §6)."""

    payload_type: int
    encoding: str
    clock_rate: int
    channels: str | None = None


def _number(text: str) -> int | None:
    """A short ASCII decimal, else None. ``str.isdigit`` alone admits "²" and 5000-digit strings,
    both of which make ``int()`` raise."""
    if 0 < len(text) <= 10 and text.isascii() and text.isdigit():
        return int(text)
    return None


def _named_formats(
    formats: Sequence[str], rtpmaps: dict[int, RtpMap]
) -> dict[str, tuple[str, int]]:
    """Format -> (encoding name, clock rate), in offer order: its rtpmap, else RFC 3551's static
    table; formats we cannot name (a dynamic payload type without rtpmap) are absent."""
    out: dict[str, tuple[str, int]] = {}
    for fmt in formats:
        pt = _number(fmt)
        if pt is None:
            continue
        mapped = rtpmaps.get(pt)
        if mapped is not None:
            out[fmt] = (mapped.encoding, mapped.clock_rate)
        elif pt in _STATIC_AUDIO:
            out[fmt] = _STATIC_AUDIO[pt]
    return out


def _parse_rtpmap(value: str) -> RtpMap | None:
    """Parse the value after ``rtpmap:``; None when it is not well formed (we then ignore it)."""
    pt_text, _, rest = value.partition(" ")
    parts = rest.strip().split("/")
    pt = _number(pt_text)
    rate = _number(parts[1].strip()) if len(parts) >= 2 else None
    if pt is None or rate is None:
        return None
    channels = parts[2].strip() if len(parts) > 2 else None
    return RtpMap(pt, parts[0].strip(), rate, channels)


def _attr_pt(line: SdpLine, names: tuple[str, ...]) -> str | None:
    """For ``a=<name>:<pt> ...`` with name in ``names`` return the payload type text."""
    if line.type != "a":
        return None
    name, sep, rest = line.value.partition(":")
    if not sep or name.strip().lower() not in names:
        return None
    return rest.split(" ", 1)[0].strip()


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class MediaDescription:
    """One media section: its ``m=`` line (``lines[0]``) and the lines that follow it."""

    media: str
    port: int
    port_count: int | None
    proto: str
    formats: tuple[str, ...]
    lines: tuple[SdpLine, ...]

    @classmethod
    def _from_lines(cls, lines: tuple[SdpLine, ...]) -> MediaDescription:
        # m=<media> <port>[/<number of ports>] <proto> <fmt> ...   (RFC 4566 §5.14)
        fields = lines[0].value.split()
        if len(fields) < 4:
            raise SdpError("malformed SDP m-line")
        port_text, slash, count_text = fields[1].partition("/")
        port, count = _number(port_text), _number(count_text)
        if port is None or port > 65535:
            raise SdpError("malformed SDP m-line port")
        if slash and count is None:
            raise SdpError("malformed SDP m-line port count")
        return cls(
            media=fields[0],
            port=port,
            port_count=count,
            proto=fields[2],
            formats=tuple(fields[3:]),
            lines=lines,
        )

    @property
    def is_rtp(self) -> bool:
        return "RTP/" in self.proto.upper()

    def attributes(self, name: str) -> list[str]:
        """Values of ``a=<name>:<value>`` (or ``""`` for a flag ``a=<name>``) in this section."""
        wanted = name.lower()
        out = []
        for line in self.lines:
            if line.type == "a":
                attr, _, value = line.value.partition(":")
                if attr.strip().lower() == wanted:
                    out.append(value.strip())
        return out

    def rtpmaps(self) -> dict[int, RtpMap]:
        maps: dict[int, RtpMap] = {}
        for value in self.attributes("rtpmap"):
            parsed = _parse_rtpmap(value)
            if parsed is not None:
                maps.setdefault(parsed.payload_type, parsed)
        return maps

    def fmtps(self) -> dict[int, str]:
        """Payload type -> format parameters from ``a=fmtp:<pt> <params>``."""
        out: dict[int, str] = {}
        for value in self.attributes("fmtp"):
            pt_text, _, params = value.partition(" ")
            pt = _number(pt_text)
            if pt is not None:
                out.setdefault(pt, params.strip())
        return out

    def codecs(self) -> dict[str, tuple[str, int]]:
        """Format -> (encoding name, clock rate) from its rtpmap, else RFC 3551's static table.

        Formats we cannot name (a dynamic payload type without rtpmap) are absent.
        """
        return _named_formats(self.formats, self.rtpmaps())

    def _with_formats(self, formats: Sequence[str]) -> MediaDescription:
        m_line = self.lines[0]
        fields = m_line.value.split()
        value = " ".join([*fields[:3], *formats])
        dropped = {f for f in self.formats if f not in formats}
        kept = [
            line
            for line in self.lines[1:]
            if (_attr_pt(line, ("rtpmap", "fmtp", "rtcp-fb")) or "") not in dropped
        ]
        return replace(
            self,
            formats=tuple(formats),
            lines=(replace(m_line, value=value), *kept),
        )


@dataclass(slots=True, unsafe_hash=True)  # a value: never mutated (see sip.transaction)
class SessionDescription:
    """A parsed SDP body; ``bytes(sd)`` reproduces the parsed bytes exactly."""

    session_lines: tuple[SdpLine, ...]
    media: tuple[MediaDescription, ...]

    @classmethod
    def parse(cls, data: bytes) -> SessionDescription:
        text = data.decode("utf-8", errors="surrogateescape")
        lines: list[SdpLine] = []
        start = 0
        while start < len(text):
            end = text.find("\n", start)
            raw = text[start:] if end < 0 else text[start : end + 1]
            start = len(text) if end < 0 else end + 1
            body = raw.rstrip("\r\n")
            eol = raw[len(body) :]
            if not body:
                lines.append(SdpLine("", "", eol))
                continue
            # type = alpha-numeric char; no whitespace on either side of "=" (RFC 4566 §5).
            if len(body) < 2 or body[1] != "=" or not body[0].isascii() or not body[0].isalpha():
                raise SdpError("malformed SDP line")
            lines.append(SdpLine(body[0], body[2:], eol))
        typed = [line for line in lines if line.type]
        if not typed or typed[0].type != "v" or typed[0].value.strip() != "0":
            raise SdpError("SDP does not start with v=0")
        first_m = next((i for i, line in enumerate(lines) if line.type == "m"), len(lines))
        sections: list[MediaDescription] = []
        i = first_m
        while i < len(lines):
            j = i + 1
            while j < len(lines) and lines[j].type != "m":
                j += 1
            sections.append(MediaDescription._from_lines(tuple(lines[i:j])))
            i = j
        return cls(tuple(lines[:first_m]), tuple(sections))

    def __bytes__(self) -> bytes:
        parts = [str(line) for line in self.session_lines]
        for section in self.media:
            parts.extend(str(line) for line in section.lines)
        return "".join(parts).encode("utf-8", errors="surrogateescape")

    @property
    def audio(self) -> MediaDescription | None:
        """The first audio section (the one a telephony call is about), if any."""
        return next((m for m in self.media if m.media.lower() == "audio"), None)


def _codec_matches(wanted: str, name: str, rate: int) -> bool:
    # "PCMU" matches any clock rate; "opus/48000" pins it.
    want_name, slash, want_rate = wanted.partition("/")
    if want_name.lower() != name.lower():
        return False
    return not slash or _number(want_rate) == rate


def _choose_formats(known: dict[str, tuple[str, int]], codecs: Sequence[str]) -> list[str] | None:
    """Formats in trunk order (all offered PTs of each codec, in offer order), then
    telephone-event at the clock rate of a kept codec (RFC 4733 §2.1 ties the two); None when
    no codec is common. ``known`` maps format -> (encoding, clock rate), in offer order."""
    chosen: list[str] = []
    for wanted in codecs:
        if wanted.lower().startswith(TELEPHONE_EVENT):
            continue  # always handled below; never counts as a common codec
        for fmt, (name, rate) in known.items():
            if fmt not in chosen and _codec_matches(wanted, name, rate):
                chosen.append(fmt)
    if not chosen:
        return None
    rates = {known[fmt][1] for fmt in chosen}
    for fmt, (name, rate) in known.items():
        if name.lower() == TELEPHONE_EVENT and rate in rates:
            chosen.append(fmt)
    return chosen


def _filter_section(section: MediaDescription, codecs: Sequence[str]) -> MediaDescription | None:
    chosen = _choose_formats(section.codecs(), codecs)
    if chosen is None:
        return None
    if len(chosen) == len(section.formats) and tuple(chosen) == section.formats:
        return section  # the offer already fits: nothing to rewrite
    return section._with_formats(chosen)


def offer_fits(body: bytes, codecs: Sequence[str]) -> bool:
    """True when ``filter_audio_codecs(SessionDescription.parse(body), codecs)`` would parse
    and return the offer unchanged: one active RTP audio stream whose formats already are the
    trunk's, in its order. False means "take the full path", not "does not fit".

    The everyday carrier offer, checked on the text without building the parsed tree (the
    same line rules as ``SessionDescription.parse``, the same choice as ``_filter_section``).
    """
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        return False
    m_value: str | None = None
    rtpmaps: dict[int, RtpMap] = {}
    first = True
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if not line:
            continue
        if len(line) < 2 or line[1] != "=" or not line[0].isalpha():
            return False
        kind = line[0]
        if first:
            if kind != "v" or line[2:].strip() != "0":
                return False
            first = False
        elif kind == "m":
            if m_value is not None:
                return False  # several media sections: the full path decides
            m_value = line[2:]
        elif kind == "a" and m_value is not None:
            attr, _, value = line[2:].partition(":")
            if attr.strip().lower() == "rtpmap":
                parsed = _parse_rtpmap(value.strip())
                if parsed is not None:
                    rtpmaps.setdefault(parsed.payload_type, parsed)
    if m_value is None:
        return False
    fields = m_value.split()
    if len(fields) < 4 or fields[0].lower() != "audio" or "RTP/" not in fields[2].upper():
        return False
    port = _number(fields[1])  # "port/count" -> None -> full path
    if port is None or port == 0 or port > 65535:
        return False
    chosen = _choose_formats(_named_formats(fields[3:], rtpmaps), codecs)
    return chosen is not None and chosen == fields[3:]


def filter_audio_codecs(sd: SessionDescription, codecs: Sequence[str]) -> SessionDescription | None:
    """Restrict every active RTP audio stream to ``codecs``, in that (the trunk's) order.

    ``codecs`` are encoding names (case-insensitive, optionally ``name/clock``). Non-audio sections
    and rejected audio streams (port 0) are left untouched. An active audio stream without a common
    codec is rejected with port 0 (RFC 3264 §6) if another audio stream survives. Returns None when
    no active audio stream keeps a codec: the caller answers 488.
    """
    new_media: list[MediaDescription] = []
    survivors = 0
    for section in sd.media:
        if section.media.lower() != "audio" or section.port == 0 or not section.is_rtp:
            new_media.append(section)
            continue
        filtered = _filter_section(section, codecs)
        if filtered is None:
            fields = section.lines[0].value.split()
            fields[1] = "0"
            disabled = replace(section.lines[0], value=" ".join(fields))
            new_media.append(replace(section, port=0, lines=(disabled, *section.lines[1:])))
        else:
            survivors += 1
            new_media.append(filtered)
    if survivors == 0:
        return None
    if all(new is old for new, old in zip(new_media, sd.media, strict=True)):
        return sd  # unchanged: callers may reuse the bytes it was parsed from
    return replace(sd, media=tuple(new_media))


# Codecs the outbound offer can name, with their static payload type (RFC 3551) and rtpmap.
_OFFERABLE: dict[str, tuple[int, str]] = {
    "PCMU": (0, "PCMU/8000"),
    "PCMA": (8, "PCMA/8000"),
    "G722": (9, "G722/8000"),
    "G729": (18, "G729/8000"),
}


def _check_token(value: str, what: str) -> None:
    if not value or any(ch.isspace() for ch in value):
        raise SdpError(f"invalid {what} for SDP offer", status=None)


def build_offer(
    origin_addr: str,
    media_addr: str,
    port: int,
    codecs: Sequence[str],
    session_id: int,
    version: int,
    telephone_event_pt: int | None = 101,
) -> SessionDescription:
    """An audio offer with ``codecs`` in order, then telephone-event (RFC 4733) unless None.

    ``session_id``/``version`` go into ``o=`` (RFC 4566 §5.2): the caller keeps them and bumps the
    version for a re-offer. Raises SdpError (status None: our own bug, not the peer's) on an
    unknown codec or an out-of-range argument.
    """
    _check_token(origin_addr, "origin address")
    _check_token(media_addr, "media address")
    if not 0 < port <= 65535 or session_id < 0 or version < 0:
        raise SdpError("invalid port or origin numbers for SDP offer", status=None)
    if telephone_event_pt is not None and not 96 <= telephone_event_pt <= 127:
        raise SdpError("telephone-event payload type must be dynamic (96-127)", status=None)
    formats: list[str] = []
    attrs: list[str] = []
    for name in codecs:
        entry = _OFFERABLE.get(name.upper())
        if entry is None:
            raise SdpError("codec not offerable", status=None)
        pt, rtpmap = entry
        if str(pt) not in formats:
            formats.append(str(pt))
            attrs.append(f"rtpmap:{pt} {rtpmap}")
    if not formats:
        raise SdpError("no codec to offer", status=None)
    if telephone_event_pt is not None:
        formats.append(str(telephone_event_pt))
        attrs.append(f"rtpmap:{telephone_event_pt} telephone-event/8000")
        attrs.append(f"fmtp:{telephone_event_pt} 0-16")
    attrs += ["ptime:20", "sendrecv"]

    def addr_type(addr: str) -> str:
        return "IP6" if ":" in addr else "IP4"

    text = "".join(
        f"{line}\r\n"
        for line in (
            "v=0",
            f"o=sipedge {session_id} {version} IN {addr_type(origin_addr)} {origin_addr}",
            "s=sipedge",
            f"c=IN {addr_type(media_addr)} {media_addr}",
            "t=0 0",
            f"m=audio {port} RTP/AVP {' '.join(formats)}",
            *(f"a={attr}" for attr in attrs),
        )
    )
    return SessionDescription.parse(text.encode("ascii"))
