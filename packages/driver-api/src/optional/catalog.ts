import type { OptionalInterfaceType } from '@bmaas/common';
import type { InterfaceDescriptor } from '../interfaces.js';
import type { OptionalInterfaceKinds } from '../optional-interfaces.js';
import {
  fakeBiosInterface,
  fakeConsoleInterface,
  fakeFirmwareInterface,
  fakeInspectInterface,
  fakeRaidInterface,
  fakeRescueInterface,
  fakeStorageInterface,
  fakeVendorInterface,
} from './fake.js';
import {
  noBiosInterface,
  noConsoleInterface,
  noFirmwareInterface,
  noInspectInterface,
  noopNetworkInterface,
  noopStorageInterface,
  noRaidInterface,
  noRescueInterface,
  noVendorInterface,
} from './generic.js';

/**
 * The implementations every conductor has of the optional kinds: the generic
 * one (first, so it is the default of a hardware type supporting both) and the fake.
 */
export const OPTIONAL_INTERFACES: {
  readonly [K in OptionalInterfaceType]: readonly InterfaceDescriptor<OptionalInterfaceKinds[K]>[];
} = {
  bios: [noBiosInterface, fakeBiosInterface],
  console: [noConsoleInterface, fakeConsoleInterface],
  firmware: [noFirmwareInterface, fakeFirmwareInterface],
  inspect: [noInspectInterface, fakeInspectInterface],
  network: [noopNetworkInterface],
  raid: [noRaidInterface, fakeRaidInterface],
  rescue: [noRescueInterface, fakeRescueInterface],
  storage: [noopStorageInterface, fakeStorageInterface],
  vendor: [noVendorInterface, fakeVendorInterface],
};
