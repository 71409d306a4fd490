"""Are two built documentation sites the same? `python bench/docs_same.py SITE_A SITE_B` (main's _docs/, a branch's).

Compares the two trees file by file: the same relative paths, and byte-identical contents except for memory addresses
(`0x7f...`, in the repr of an object a page may show: a constant holding functions), which differ from one process to
the next, and the checksums Sphinx appends to the links of a file that holds such addresses (`ck-search-text.js?v=...`:
a warm build links the search text of the build before it, by its CRC), and, in the search index (searchindex.js),
the words that are such addresses: the order of their entries follows the addresses, and a warm build keeps those of
the build before it, emptied (so their entries are compared as a sorted list, the emptied ones left out). Build both from
the same checkout path (a constant's value may show it: `ARTIFACT_DIR`), or name the two checkouts with `--roots A B`
to read each as `<root>` (.buildinfo's config hash still differs then: it hashes the site's absolute static paths).
Prints every difference (a missing file, or a changed one with its first differing line) and exits 1 if there is
any, else prints how many files it compared and exits 0.
"""
import argparse, difflib, json, re, sys
from pathlib import Path

ADDRESS = re.compile(rb'0x[0-9a-fA-F]{6,16}')


def normalised(body: bytes, root: str = '', with_addresses: tuple = ()) -> bytes:
    """A file's contents with memory addresses, the checksums in links to the files `with_addresses` (their names) and
    the checkout path `root`, if given, replaced: what is left must be identical."""
    if root: body = body.replace(root.encode(), b'<root>')
    for name in with_addresses:
        body = re.sub(re.escape(name.encode()) + rb'\?v=[0-9a-f]+', name.encode() + b'?v=?', body)
    return ADDRESS.sub(b'0x?', body)


def search_index(body: bytes) -> bytes:
    """Sphinx's searchindex.js with the words that are memory addresses read as one: their entries sorted, the
    emptied ones (words of the build before, which a warm build keeps with no page) left out."""
    head, tail = b'Search.setIndex(', b')'
    if not (body.startswith(head) and body.rstrip().endswith(tail)): return body
    index = json.loads(body[len(head):body.rstrip().rindex(tail)])
    for key, words in index.items():
        if not isinstance(words, dict): continue
        addresses = sorted(json.dumps(v) for w, v in words.items() if ADDRESS.fullmatch(w.encode()) and v != [])
        index[key] = {w: v for w, v in words.items() if not ADDRESS.fullmatch(w.encode())}
        if addresses: index[key]['0x?'] = addresses
    return head + json.dumps(index, sort_keys=True).encode() + tail


def files(site: Path) -> dict:
    return {p.relative_to(site).as_posix(): p for p in sorted(site.rglob('*')) if p.is_file()}


def first_difference(a: bytes, b: bytes, context: int = 100) -> str:
    "Where two contents first differ, as a short unified diff of their lines (text) or an offset (binary)."
    try: la, lb = a.decode().splitlines(), b.decode().splitlines()
    except UnicodeDecodeError:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return f'    binary, first difference at byte {at} ({len(a)} vs {len(b)} bytes)'
    diff = [l[:2 * context] for l in difflib.unified_diff(la, lb, lineterm='', n=0)][2:8]
    return '\n'.join('    ' + l for l in diff)


def compare(site_a: Path, site_b: Path, root_a: str = '', root_b: str = '') -> list[str]:
    "Every difference between the two sites, as lines to print (none: the same site)."
    fa, fb = files(site_a), files(site_b)
    problems = [f'only in {site_a}: {rel}' for rel in sorted(fa.keys() - fb.keys())]
    problems += [f'only in {site_b}: {rel}' for rel in sorted(fb.keys() - fa.keys())]
    with_addresses = tuple(sorted({p.name for p in [*fa.values(), *fb.values()] if ADDRESS.search(p.read_bytes())}))
    for rel in sorted(fa.keys() & fb.keys()):
        a, b = fa[rel].read_bytes(), fb[rel].read_bytes()
        if a != b and rel.endswith('searchindex.js'): a, b = search_index(a), search_index(b)
        if a != b and (na := normalised(a, root_a, with_addresses)) != (nb := normalised(b, root_b, with_addresses)):
            problems.append(f'differs: {rel}\n' + first_difference(na, nb))
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('site_a', type=Path)
    ap.add_argument('site_b', type=Path)
    ap.add_argument('--roots', nargs=2, default=['', ''], metavar=('ROOT_A', 'ROOT_B'),
                    help='the checkouts the two sites were built from (their paths are then read as <root>)')
    a = ap.parse_args(argv)
    for site in (a.site_a, a.site_b):
        if not site.is_dir(): sys.exit(f'{site} is not a folder (a built site)')
    problems = compare(a.site_a, a.site_b, *a.roots)
    print('\n'.join(problems) if problems else
          f'the same site: {len(files(a.site_a))} files, identical (memory addresses aside)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
