#!/usr/bin/env python3
"""Make calibkit's chart font from DejaVu Sans: `python tools/make_fonts.py [SRC_DIR]`.

SRC_DIR holds DejaVuSans.ttf and DejaVuSans-Bold.ttf (default /usr/share/fonts/truetype/dejavu, Debian's
fonts-dejavu-core 2.37). Writes calibkit/fonts/CalibkitSans-{Regular,Bold}.ttf, the glyphs of the Unicode ranges
below (Latin, Greek, punctuation, super- and subscripts, arrows, mathematical operators, technical symbols,
geometric shapes) without hinting, and ranges.txt, the characters both faces have (calibkit.charts.font_chars
reads it). The family is renamed "Calibkit Sans", so that no installed font of that name can stand in for it when a
chart is measured (the Bitstream Vera licence also asks a modified font to be renamed). Shapes and advance widths
are DejaVu Sans' own: a browser that falls back to an installed DejaVu Sans draws the same layout.
Needs fontTools; the output is committed and byte-identical on every run: nothing runs this at build or test time.
"""
import sys
from pathlib import Path

RANGES = 'U+0020-007E,U+00A0-017F,U+0391-03C9,U+2010-205E,U+2070-209F,U+2190-21FF,U+2200-22FF,U+2300-23FF,U+25A0-25FF'
OUT = Path(__file__).resolve().parents[1]/'calibkit'/'fonts'
FAMILY = 'Calibkit Sans'


def make(src: Path, style: str) -> set:
    "Subset and rename one face; return the code points it keeps."
    from fontTools import subset
    from fontTools.ttLib import TTFont
    opts = subset.Options()
    opts.name_IDs, opts.name_languages, opts.layout_features = ['*'], ['*'], ['*']
    opts.notdef_outline, opts.hinting = True, False
    font = TTFont(src, recalcTimestamp=False)   # keep the source's date: the same bytes on every run
    s = subset.Subsetter(opts)
    s.populate(unicodes=subset.parse_unicodes(RANGES))
    s.subset(font)
    full = FAMILY if style == 'Regular' else f'{FAMILY} {style}'
    names = {1: FAMILY, 16: FAMILY, 4: full, 6: f'CalibkitSans-{style}'}
    for rec in font['name'].names:
        if rec.nameID in names:
            font['name'].setName(names[rec.nameID], rec.nameID, rec.platformID, rec.platEncID, rec.langID)
    font.save(OUT/f'CalibkitSans-{style}.ttf')
    return set(font.getBestCmap())


def spans(points) -> str:
    "Code points as U+XXXX-YYYY ranges."
    out = []
    for p in sorted(points):
        if out and p == out[-1][1] + 1: out[-1][1] = p
        else: out.append([p, p])
    return ','.join(f'U+{a:04X}' + (f'-{b:04X}' if b > a else '') for a, b in out)


if __name__ == '__main__':
    src = Path(sys.argv[1] if len(sys.argv) > 1 else '/usr/share/fonts/truetype/dejavu')
    faces = (('DejaVuSans.ttf', 'Regular'), ('DejaVuSans-Bold.ttf', 'Bold'))
    both = set.intersection(*(make(src/name, style) for name, style in faces))
    (OUT/'ranges.txt').write_text(spans(both) + '\n')
    print(f'{OUT}: {len(both)} characters in both faces')
