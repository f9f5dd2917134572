"""sipedge: the SIP trunk edge of a voice-AI agent platform."""

__version__ = "0.1.0"
