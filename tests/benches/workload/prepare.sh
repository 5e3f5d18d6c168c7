#!/usr/bin/env bash
# Makes the fixture project's vendored packages, outside the sandbox and before any run:
#   prepare.sh VENDOR_DIR
# writes VENDOR_DIR/greet-1.0.0.tgz (`npm pack` of packages/greet-js) and
# VENDOR_DIR/greet_py-1.0.0-py3-none-any.whl (packages/greet-py as a wheel, written here
# with Python's zipfile: no setuptools, no index). Nothing here touches the network.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
vendor="$1"
mkdir -p "$vendor"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# npm writes its logs and cache under HOME: a scratch one, not the caller's.
(cd "$vendor" && HOME="$scratch" npm pack --silent --offline "$here/packages/greet-js" >/dev/null)
/usr/bin/python3 - "$here/packages/greet-py" "$vendor" <<'PY'
import base64, hashlib, pathlib, sys, zipfile

src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
name, version = "greet_py", "1.0.0"
info = f"{name}-{version}.dist-info"
files = {f"{name}/__init__.py": (src / name / "__init__.py").read_bytes()}
files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: greet-py\nVersion: {version}\n".encode()
files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: prepare.sh\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join(f"{path},{digest(data)},{len(data)}\n" for path, data in files.items())
files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
with zipfile.ZipFile(out / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
    for path, data in files.items():
        wheel.writestr(zipfile.ZipInfo(path, (2020, 1, 1, 0, 0, 0)), data)
PY
