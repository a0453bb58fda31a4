#!/usr/bin/env python3
"""Writes tests/data/spm_hostile.txt, the hostile text tests/cli_spm.sh
encodes with tfm and with spm_encode (run by hand; the output is committed,
so the tests need no Python): Multi30k lines with inserted invalid UTF-8,
NUL and control bytes, characters NFKC changes (ligatures, fullwidth,
halfwidth katakana, compatibility digits, combining marks, Hangul), CJK and
emoji the models have not seen, runs of spaces, text that looks like pieces
(<unk>, <0x41>, <s>, a literal U+2581), and long lines. No line ends in
"\\r": tfm drops one there (CRLF files), spm_encode keeps it."""
import gzip, random, sys

r = random.Random(61)
base = gzip.open("data/test_2016_flickr.de.gz").read().split(b"\n")[:300]
base += gzip.open("data/test_2016_flickr.en.gz").read().split(b"\n")[:300]
base = [b for b in base if b]
specials = ["\ufb01", "\u2460", "\uff21\uff42\uff43", "\uff76\uff9e", "\uac00", "e\u0301", "\u00e9",
            "\u212b", "\u2122", "\u00bd", "\u3000", "\u00a0", "\u200b", "\u6f22\u5b57",
            "\U0001F600", "\t", "\x01", "\x7f", "\x1b[0m", "\u2581", "<unk>", "<0x41>", "<s>",
            "</s>", "<sep>", "  ", "   ", "\u2028", "\ufeff", "\ufffd", "\u00df", "\u0130",
            "\ufb00", "\uff9f", "\u0301", "\r", "\u1100\u1161", "\u00c5", "x\u0308"]
bad = [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\x80",
       b"\x00", b"\xf0\x9f\x98"]
out = []
for i in range(400):
    k = r.randrange(8)
    if k == 0:
        out.append(b" " * r.randrange(0, 6))
    elif k == 1:
        out.append(b"".join(r.choice(bad) if r.random() < .3 else r.choice(specials).encode()
                            for _ in range(r.randrange(1, 12))))
    elif k == 2 and i % 4 == 0:
        out.append(b" ".join(r.choice(base) for _ in range(r.randrange(50, 150))))
    else:
        w = bytearray(r.choice(base))
        for _ in range(r.randrange(0, 4)):
            p = r.randrange(len(w) + 1)
            w[p:p] = r.choice(bad) if r.random() < .3 else r.choice(specials).encode()
        out.append(bytes(w))
out = [o.replace(b"\n", b" ").rstrip(b"\r") for o in out]
sys.stdout.buffer.write(b"\n".join(out) + b"\n")
