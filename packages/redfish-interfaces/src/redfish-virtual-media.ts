import { InvalidParameterValue, RedfishError, type VmediaDevice } from '@bmaas/common';
import { bmcName } from './driver-info.js';
import { odataId, type RedfishResource } from './redfish-client.js';
import { objectAt, type RedfishNode, stringsAt } from './redfish-node.js';

/** Ironic's virtual media device -> the Redfish MediaTypes that can hold it (a DVD drive takes a CD). */
const MEDIA_TYPES: Readonly<Record<VmediaDevice, readonly string[]>> = {
  cdrom: ['CD', 'DVD'],
  disk: ['USBStick'],
  floppy: ['Floppy'],
};

/** One VirtualMedia resource of the node, read. */
export interface VirtualMediaSlot {
  path: string;
  body: RedfishResource;
}

/**
 * The node's VirtualMedia resources: those of its ComputerSystem when it
 * has a VirtualMedia collection (newer services), else those of the
 * Managers that manage it (Links.ManagedBy), as upstream looks in both.
 */
export async function virtualMediaSlots(node: RedfishNode): Promise<VirtualMediaSlot[]> {
  const { body: system } = await node.system();
  const owners: string[] = [];
  const own = odataId(system.VirtualMedia);
  if (own) owners.push(own);
  else {
    const managedBy = objectAt(system, 'Links').ManagedBy;
    for (const manager of Array.isArray(managedBy) ? managedBy : []) {
      const path = odataId(manager);
      if (!path) continue;
      const collection = odataId((await node.client.get(node.target, path)).VirtualMedia);
      if (collection) owners.push(collection);
    }
  }
  const slots: VirtualMediaSlot[] = [];
  for (const collection of owners) {
    const listed = await node.client.get(node.target, collection);
    for (const member of Array.isArray(listed.Members) ? listed.Members : []) {
      const path = odataId(member);
      if (path) slots.push({ path, body: await node.client.get(node.target, path) });
    }
  }
  return slots;
}

/** The slots that can hold `device`, in the service's order. */
export function slotsFor(slots: readonly VirtualMediaSlot[], device: VmediaDevice): VirtualMediaSlot[] {
  const wanted = MEDIA_TYPES[device];
  return slots.filter((slot) => (stringsAt(slot.body, 'MediaTypes') ?? []).some((type) => wanted.includes(type)));
}

/** Whether the slot holds a medium (Inserted, or an Image where the service does not say). */
export function isInserted(slot: VirtualMediaSlot): boolean {
  const inserted = slot.body.Inserted;
  if (typeof inserted === 'boolean') return inserted;
  return typeof slot.body.Image === 'string' && slot.body.Image !== '';
}

function actionTarget(node: RedfishNode, slot: VirtualMediaSlot, action: string): string {
  const target = objectAt(objectAt(slot.body, 'Actions'), `#VirtualMedia.${action}`).target;
  if (typeof target !== 'string' || target === '') {
    throw new RedfishError(`BMC ${bmcName(node.target)}: ${slot.path} offers no VirtualMedia.${action} action.`);
  }
  return target;
}

/** VirtualMedia.EjectMedia of one slot, when it holds a medium. */
export async function ejectSlot(node: RedfishNode, slot: VirtualMediaSlot): Promise<boolean> {
  if (!isInserted(slot)) return false;
  await node.client.post(node.target, actionTarget(node, slot, 'EjectMedia'), {});
  return true;
}

/**
 * Inserts `imageUrl` in the node's first slot that takes `device`, ejecting
 * what any such slot held first (VirtualMedia.InsertMedia, write-protected).
 * A slot that already holds this very image is left alone (idempotent).
 */
export async function insertMedia(
  node: RedfishNode,
  device: VmediaDevice,
  imageUrl: string,
): Promise<'inserted' | 'unchanged'> {
  const slots = slotsFor(await virtualMediaSlots(node), device);
  const [first] = slots;
  if (!first) {
    throw new InvalidParameterValue(`BMC ${bmcName(node.target)} has no virtual media device that takes a ${device}.`);
  }
  if (isInserted(first) && first.body.Image === imageUrl && slots.slice(1).every((slot) => !isInserted(slot))) {
    return 'unchanged';
  }
  for (const slot of slots) await ejectSlot(node, slot);
  await node.client.post(node.target, actionTarget(node, first, 'InsertMedia'), {
    Image: imageUrl,
    Inserted: true,
    WriteProtected: true,
  });
  return 'inserted';
}
