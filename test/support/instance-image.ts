/**
 * instance_info the direct deploy interface accepts (an image by URL, with its
 * hash). Suites that stop in `wait call-back` never download it; nothing listens
 * at that address.
 */
export const UNFETCHED_INSTANCE_INFO = {
  image_source: 'http://127.0.0.1:9/never-fetched.raw',
  image_os_hash_algo: 'sha256',
  image_os_hash_value: '0'.repeat(64),
} as const;
