# A tiny plot writer for the examples and benchmarks: draws curves scaled to [0, max]
# on a white canvas with axes and writes an RGB PNG with zlib. No plotting
# library needed.
import struct
import zlib


def _png(path, width, height, pixels):
    raw = b"".join(b"\x00" + bytes(pixels[y * width * 3:(y + 1) * width * 3])
                   for y in range(height))

    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def save_line_plot(path, series, title="", width=640, height=400):
    """series: [(label, values, (r, g, b))]; each curve is scaled to its own max."""
    pixels = bytearray([255] * (width * height * 3))
    left, right, top, bottom = 50, width - 20, 30, height - 40

    def put(x, y, color):
        if 0 <= x < width and 0 <= y < height:
            i = (y * width + x) * 3
            pixels[i:i + 3] = bytes(color)

    def line(x0, y0, x1, y1, color, thick=2):
        steps = max(abs(x1 - x0), abs(y1 - y0), 1)
        for s in range(steps + 1):
            x = round(x0 + (x1 - x0) * s / steps)
            y = round(y0 + (y1 - y0) * s / steps)
            for dx in range(thick):
                for dy in range(thick):
                    put(x + dx, y + dy, color)

    line(left, bottom, right, bottom, (0, 0, 0), 1)
    line(left, top, left, bottom, (0, 0, 0), 1)
    for k in range(1, 5):  # grid
        y = bottom - (bottom - top) * k // 4
        for x in range(left, right, 6):
            put(x, y, (200, 200, 200))
    for _, values, color in series:
        top_value = max(max(values), 1e-12)
        points = [(left + (right - left) * i // max(len(values) - 1, 1),
                   bottom - round((bottom - top) * v / top_value)) for i, v in enumerate(values)]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            line(x0, y0, x1, y1, color)
    _png(path, width, height, pixels)


def save_bar_plot(path, labels, values, reference=1.0, width=720, height=360):
    """One bar per label (scaled to the largest value), with a line at
    `reference`; labels are not drawn (the caller prints the table)."""
    pixels = bytearray([255] * (width * height * 3))
    left, right, top, bottom = 40, width - 20, 20, height - 30
    top_value = max(max(values, default=1.0), reference, 1e-12) * 1.1
    n = max(len(values), 1)
    slot = (right - left) / n

    def fill(x0, y0, x1, y1, color):
        for y in range(max(y0, 0), min(y1, height)):
            for x in range(max(x0, 0), min(x1, width)):
                i = (y * width + x) * 3
                pixels[i:i + 3] = bytes(color)

    for i, v in enumerate(values):
        x0 = int(left + i * slot + slot * 0.15)
        x1 = int(left + (i + 1) * slot - slot * 0.15)
        y0 = int(bottom - (bottom - top) * v / top_value)
        fill(x0, y0, x1, bottom, (40, 120, 200) if v >= reference else (200, 80, 60))
    ref_y = int(bottom - (bottom - top) * reference / top_value)
    fill(left, ref_y, right, ref_y + 2, (0, 0, 0))
    fill(left, bottom, right, bottom + 1, (0, 0, 0))
    _png(path, width, height, pixels)
