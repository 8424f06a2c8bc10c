// A certified OpenID Connect provider (npm oidc-provider) on loopback, for the single sign-on tests.
//
//   node provider.mjs <folder holding node_modules/oidc-provider> <configuration JSON>
//
// The configuration: {"issuers": [{"conformIdTokenClaims": bool}, ...], "clients": [client metadata],
// "accounts": {"<login>": {"email": ..., "email_verified": bool, "name": ...}}}. Each issuer listens
// on its own free port of 127.0.0.1; all of them sign with one RSA key and know the same clients and
// accounts. Once every issuer listens, one JSON line {"issuers": [url, ...]} goes to standard output.
// The provider runs until its standard input closes (the test ends) or it is killed.
import { createServer } from 'node:http';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dir, raw] = process.argv.slice(2);
if (!dir || !raw) {
  process.stderr.write('usage: node provider.mjs <oidc-provider folder> <configuration JSON>\n');
  process.exit(2);
}
const { default: Provider } = await import(pathToFileURL(join(dir, 'node_modules', 'oidc-provider', 'lib', 'index.js')).href);
const cfg = JSON.parse(raw);

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = { ...privateKey.export({ format: 'jwk' }), kid: 'guilds-test', alg: 'RS256', use: 'sig' };

async function findAccount(ctx, id) {
  const claims = cfg.accounts[id];
  if (!claims) {
    return undefined;
  }
  return { accountId: id, claims: async () => ({ sub: id, ...claims }) };
}

const issuers = [];
for (const want of cfg.issuers) {
  const server = createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: cfg.clients,
    jwks: { keys: [key] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    conformIdTokenClaims: want.conformIdTokenClaims !== false,
    pkce: { required: () => true },
    findAccount,
    features: { devInteractions: { enabled: true } },
  });
  server.on('request', provider.callback());
  issuers.push(issuer);
}
process.stdout.write(JSON.stringify({ issuers }) + '\n');
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
