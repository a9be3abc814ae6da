"""The base of the generated dataclasses (models.py): made from the API's
JSON and back, keeping fields a newer server adds in `extra`."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple


class Operation(NamedTuple):
    """One route: its method, path template and how its answer is read
    ("model", "list" or "page" of `model`, "json", "text", "bytes", "none")."""

    method: str
    path: str
    answer: str
    model: str | None


class Model:
    # attribute -> (JSON name, name of the model its value is made into)
    _fields: ClassVar[dict[str, tuple[str, str | None]]] = {}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        from .models import MODELS

        values = {}
        for attr, (name, model) in cls._fields.items():
            if name in data:
                values[attr] = _make(MODELS[model], data[name]) if model else data[name]
        obj = cls(**values)
        obj.extra = {k: v for k, v in data.items() if k not in {n for n, _ in cls._fields.values()}}
        return obj

    def to_dict(self) -> dict[str, Any]:
        """The object as the API's JSON (fields left None are omitted)."""
        out = dict(getattr(self, "extra", {}))
        for attr, (name, _) in self._fields.items():
            value = getattr(self, attr)
            if value is not None:
                out[name] = _plain(value)
        return out

    def __getitem__(self, name: str) -> Any:
        """Reads a field by its JSON name too (obj["from"])."""
        for attr, (json_name, _) in self._fields.items():
            if json_name == name:
                return getattr(self, attr)
        return getattr(self, "extra", {})[name]


def _make(model: type[Model], value: Any) -> Any:
    if isinstance(value, list):
        return [_make(model, v) for v in value]
    return model.from_dict(value) if isinstance(value, dict) else value


def _plain(value: Any) -> Any:
    if isinstance(value, Model):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return value
