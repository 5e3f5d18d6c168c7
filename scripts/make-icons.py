#!/usr/bin/env python3
"""Draws the application and tray icons (a shield) as RGBA PNGs, with no dependencies,
and the same shield as an SVG for the desktop's scalable icon.

Run from the repository root: python3 scripts/make-icons.py
"""
import math
import struct
import zlib

STATES = {
    # name: (shield colour, mark)
    "idle": ((46, 125, 90), "check"),
    "pending": ((214, 120, 0), "bang"),
    "paused": ((110, 110, 120), "pause"),
    # A canary's run is stopped: red, and a cross rather than the pending bang, so the
    # state does not rest on colour alone.
    "alert": ((198, 40, 40), "cross"),
}


def shield(x, y):
    """Signed-ish inside test for a shield in the unit square (y down)."""
    if y < 0.08 or y > 0.95:
        return False
    half = 0.40 if y < 0.55 else 0.40 * math.sqrt(max(0.0, 1 - ((y - 0.55) / 0.40) ** 2))
    return abs(x - 0.5) <= half


def mark(kind, x, y):
    if kind == "check":
        # two strokes of a tick
        d1 = abs((y - 0.52) - (x - 0.36)) / math.sqrt(2)
        d2 = abs((y - 0.66) + (x - 0.46) * 1.4) / math.sqrt(1 + 1.96)
        return (0.30 <= x <= 0.47 and d1 < 0.055 and y <= 0.70) or (0.44 <= x <= 0.70 and d2 < 0.055 and y >= 0.30)
    if kind == "bang":
        return (abs(x - 0.5) < 0.06 and 0.25 <= y <= 0.58) or ((x - 0.5) ** 2 + (y - 0.71) ** 2 < 0.065 ** 2)
    if kind == "cross":
        inside = 0.30 <= x <= 0.70 and 0.26 <= y <= 0.66
        d1 = abs((y - 0.46) - (x - 0.5)) / math.sqrt(2)
        d2 = abs((y - 0.46) + (x - 0.5)) / math.sqrt(2)
        return inside and (d1 < 0.06 or d2 < 0.06)
    if kind == "pause":
        return 0.27 <= y <= 0.70 and (0.34 <= x <= 0.45 or 0.55 <= x <= 0.66)
    return False


def render(size, colour, kind):
    rows = []
    ss = 4
    for py in range(size):
        row = bytearray([0])
        for px in range(size):
            cov = 0
            white = 0
            for sy in range(ss):
                for sx in range(ss):
                    x = (px + (sx + 0.5) / ss) / size
                    y = (py + (sy + 0.5) / ss) / size
                    if shield(x, y):
                        cov += 1
                        if mark(kind, x, y):
                            white += 1
            a = cov / (ss * ss)
            w = white / cov if cov else 0
            r, g, b = (int(c * (1 - w) + 255 * w) for c in colour)
            row += bytes([r, g, b, int(255 * a)])
        rows.append(bytes(row))
    raw = b"".join(rows)

    def chunk(tag, data):
        c = struct.pack(">I", len(data)) + tag + data
        return c + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


# The sizes the freedesktop hicolor theme is looked up in (the .deb installs each one).
HICOLOR_SIZES = (16, 22, 24, 32, 48, 64, 128, 256)  # and 512: icon.png


def svg(colour):
    """The idle shield as an SVG at the 512 px the largest PNG has: the rectangle and
    half-disc of shield(), and the tick of mark("check") as its two strokes, each cut to
    the same box mark() keeps it in."""
    s = 512
    r, g, b = colour
    n = lambda v: f"{v * s:.1f}"  # noqa: E731
    # Each stroke's centre line (from mark()) and the box it is cut to: x0, x1, y0, y1.
    strokes = [
        (lambda x: x + 0.16, (0.30, 0.47, 0.0, 0.70)),
        (lambda x: 1.304 - 1.4 * x, (0.44, 0.70, 0.30, 1.0)),
    ]
    clips, lines = [], []
    for i, (line, (x0, x1, y0, y1)) in enumerate(strokes):
        clips.append(
            f'    <clipPath id="c{i}"><rect x="{n(x0)}" y="{n(y0)}" width="{n(x1 - x0)}" height="{n(y1 - y0)}"/></clipPath>\n'
        )
        lines.append(
            f'  <line x1="{n(x0 - 0.1)}" y1="{n(line(x0 - 0.1))}" x2="{n(x1 + 0.1)}" y2="{n(line(x1 + 0.1))}" '
            f'stroke="#ffffff" stroke-width="{n(0.11)}" clip-path="url(#c{i})"/>\n'
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{s}" height="{s}" viewBox="0 0 {s} {s}">\n'
        "  <defs>\n" + "".join(clips) + "  </defs>\n"
        f'  <path d="M{n(0.1)} {n(0.08)}H{n(0.9)}V{n(0.55)}A{n(0.4)} {n(0.4)} 0 0 1 {n(0.1)} {n(0.55)}Z" '
        f'fill="#{r:02x}{g:02x}{b:02x}"/>\n' + "".join(lines) + "</svg>\n"
    )


def main():
    colour, kind = STATES["idle"]
    for size in HICOLOR_SIZES:
        with open(f"icons/{size}x{size}.png", "wb") as f:
            f.write(render(size, colour, kind))
    with open("icons/icon.png", "wb") as f:
        f.write(render(512, colour, kind))
    with open("icons/landstrip-tray.svg", "w") as f:
        f.write(svg(colour))
    for name, (colour, kind) in STATES.items():
        with open(f"icons/tray-{name}.png", "wb") as f:
            f.write(render(64, colour, kind))


if __name__ == "__main__":
    main()
