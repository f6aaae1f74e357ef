import type { ApiClient } from '@bmaas/api-client';

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

/**
 * A fake-hardware node that boots by iPXE and deploys with `direct` (these deploy kernel
 * and ramdisk files, an image never fetched), with its port, in "wait call-back": its
 * owner has rendered its script. For the boot path's suites.
 */
export async function ipxeNodeWaitingCallBack(
  rest: ApiClient,
  name: string,
  mac: string,
  images: { kernel: string; ramdisk: string },
  timeoutMs?: number,
): Promise<{ uuid: string; macHyphens: string }> {
  const node = await rest.createNode({
    driver: 'fake-hardware',
    name,
    boot_interface: 'ipxe',
    deploy_interface: 'direct',
    power_interface: 'fake',
    management_interface: 'fake',
    driver_info: { deploy_kernel: images.kernel, deploy_ramdisk: images.ramdisk },
    instance_info: UNFETCHED_INSTANCE_INFO,
  });
  await rest.createPort(node.uuid, mac);
  await rest.deployToWaitCallBack(node.uuid, timeoutMs);
  return { uuid: node.uuid, macHyphens: mac.replaceAll(':', '-') };
}
