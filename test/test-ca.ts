import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';

/**
 * A certificate authority made for one test, and a certificate it signed for `names`
 * (subjectAltName entries: IP:127.0.0.1, DNS:agent.test). Clients trust it by its `ca`.
 */
export function testCertificates(t: TestContext, names: readonly string[] = ['IP:127.0.0.1']) {
  const dir = mkdtempSync(path.join(tmpdir(), 'test-ca-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-subj',
    '/CN=Test CA',
    '-days',
    '1',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  openssl('req', ...ec, '-keyout', file('site.key'), '-out', file('site.csr'), '-subj', '/CN=test site');
  writeFileSync(file('san.ext'), `subjectAltName=${names.join(',')}\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    file('site.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('site.crt'),
    '-days',
    '1',
    '-extfile',
    file('san.ext'),
  );
  return { ca: readFileSync(file('ca.crt'), 'utf8'), key: readFileSync(file('site.key')), cert: readFileSync(file('site.crt')) };
}
