/** Devices a virtual medium may be attached as (Ironic's VMEDIA_DEVICES), for the API and the interfaces. */
export const VMEDIA_DEVICES = ['disk', 'cdrom', 'floppy'] as const;
export type VmediaDevice = (typeof VMEDIA_DEVICES)[number];
