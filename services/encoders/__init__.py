"""Sentence encoders behind one protocol (`base.Encoder`), one module per backend, one registry."""

from services.encoders.base import (
    Encoder, EncoderSpec, backend_names, create_encoder, register,
)
from services.encoders.device import choose_device

__all__ = ["Encoder", "EncoderSpec", "backend_names", "choose_device", "create_encoder", "register"]
