#!/usr/bin/env node
import {
  CertificateRequestError,
  ensureCertificate,
  ensureCertificateAuthority,
  parseCertificateArgument,
} from './pki.js';

const USAGE =
  'usage: bmaas-certificates DIRECTORY [NAME[=HOST,HOST...]]...\n' +
  "  Makes the install's CA in DIRECTORY unless it exists, then a certificate for each NAME\n" +
  '  (kept while it names the same hosts), valid for the HOSTs given (DNS names or IP addresses;\n' +
  '  NAME alone when none). Example: bmaas-certificates /var/lib/bmaas/tls api=api,localhost,127.0.0.1 conductor-0';

/**
 * `bmaas-certificates DIRECTORY NAME=HOSTS...`: the install's CA and one
 * certificate per process (docker-compose.yml runs it once before the API
 * and conductors). Prints where the files are, never a key.
 */
function main(argv: readonly string[]): number {
  const [directory, ...names] = argv;
  if (!directory || directory.startsWith('-')) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  try {
    const authority = ensureCertificateAuthority(directory);
    process.stdout.write(`CA certificate ${authority.certFile} (private key ${authority.keyFile})\n`);
    for (const argument of names) {
      const files = ensureCertificate({ directory, ...parseCertificateArgument(argument) });
      process.stdout.write(`${argument.split('=')[0]}: certificate ${files.certFile}, private key ${files.keyFile}\n`);
    }
    return 0;
  } catch (error) {
    if (!(error instanceof CertificateRequestError)) throw error;
    process.stderr.write(`bmaas-certificates: ${error.message}\n${USAGE}\n`);
    return 2;
  }
}

process.exit(main(process.argv.slice(2)));
