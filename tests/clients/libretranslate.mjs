// libretranslate.mjs: npm's LibreTranslate client (the `libretranslate`
// package, called as its README shows) against a server: prints what its
// translate() returns for one text, as it is ("undefined" when the client
// got no translation).
//   node libretranslate.mjs URL SOURCE TARGET FORMAT TEXT   (SOURCE "": the client's "auto")
import { translate } from 'libretranslate';

const [apiurl, source, target, format, query] = process.argv.slice(2);
const out = await translate({ query, source: source || undefined, target, format, apiurl });
process.stdout.write(String(out) + '\n');
