"""A PEP 517 build backend in the standard library alone, so that
`pip install ./sdk/python` needs nothing from a package index, with or
without build isolation (setuptools before 70.1 needs the `wheel` package
to build a wheel, and many Pythons lack it). It packs callsign/ as a
pure-Python wheel, or with the tests and generator as an sdist."""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME, VERSION = "callsign", "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
DIST_INFO = f"{NAME}-{VERSION}.dist-info"


def _metadata() -> str:
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            "Summary: Callsign's API for agents: identities, mail, texts, calls, vault, verification codes and events\n"
            "Requires-Python: >=3.10\nDescription-Content-Type: text/markdown\n\n" + readme)


def _package_files():
    for root, _, files in os.walk(os.path.join(HERE, NAME)):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(root, f)
                yield path, os.path.relpath(path, HERE).replace(os.sep, "/")


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    filename = f"{NAME}-{VERSION}-py3-none-any.whl"
    files = [(arc, open(path, "rb").read()) for path, arc in _package_files()]
    files += [(f"{DIST_INFO}/METADATA", _metadata().encode()),
              (f"{DIST_INFO}/WHEEL", b"Wheel-Version: 1.0\nGenerator: callsign build_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n")]
    record = io.StringIO()
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as whl:
        for arc, data in files:
            whl.writestr(arc, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.write(f"{arc},sha256={digest},{len(data)}\n")
        record.write(f"{DIST_INFO}/RECORD,,\n")
        whl.writestr(f"{DIST_INFO}/RECORD", record.getvalue())
    return filename


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    with tarfile.open(os.path.join(sdist_directory, base + ".tar.gz"), "w:gz") as tar:
        for name in ["pyproject.toml", "README.md", "build_backend.py", "gen.py", NAME, "tests"]:
            tar.add(os.path.join(HERE, name), arcname=f"{base}/{name}",
                    filter=lambda t: None if "__pycache__" in t.name else t)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return base + ".tar.gz"
