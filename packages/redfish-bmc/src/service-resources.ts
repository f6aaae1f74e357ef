// The resources of the service as a whole: the service root, the SessionService and its
// sessions, the Managers and Chassis (one each per system), the UpdateService with its
// FirmwareInventory.
import type { FirmwareComponent, ManagedSystem } from './managed-system.js';
import { collection, link, ROOT, resource } from './odata.js';
import type { Session, SessionStore } from './sessions.js';
import { chassisPath, managerPath, systemPath, virtualMediaPath } from './system-resources.js';
import { VIRTUAL_CD_ID, type VirtualCd } from './virtual-media.js';

export const SESSIONS_PATH = `${ROOT}/SessionService/Sessions`;

export function serviceRoot(uuid: string) {
  return {
    ...resource('ServiceRoot', `${ROOT}/`, 'RootService', 'bmaas lab Redfish service'),
    RedfishVersion: '1.11.0',
    UUID: uuid,
    Product: 'bmaas lab BMC',
    Vendor: 'bmaas',
    ProtocolFeaturesSupported: { ExpandQuery: { ExpandAll: false }, FilterQuery: false, SelectQuery: false },
    Systems: link(`${ROOT}/Systems`),
    Managers: link(`${ROOT}/Managers`),
    Chassis: link(`${ROOT}/Chassis`),
    SessionService: link(`${ROOT}/SessionService`),
    UpdateService: link(`${ROOT}/UpdateService`),
    Registries: link(`${ROOT}/Registries`),
    Links: { Sessions: link(SESSIONS_PATH) },
  };
}

export function sessionService(sessions: SessionStore) {
  return {
    ...resource('SessionService', `${ROOT}/SessionService`, 'SessionService', 'Session Service'),
    ServiceEnabled: true,
    SessionTimeout: sessions.timeoutSeconds,
    Status: { State: 'Enabled', Health: 'OK' },
    Sessions: link(SESSIONS_PATH),
  };
}

export function sessionCollection(sessions: SessionStore) {
  return collection(
    'SessionCollection',
    SESSIONS_PATH,
    'Session Collection',
    sessions.list().map((s) => `${SESSIONS_PATH}/${s.id}`),
  );
}

export function session(s: Session) {
  return {
    ...resource('Session', `${SESSIONS_PATH}/${s.id}`, s.id, `Session ${s.id}`),
    UserName: s.userName,
  };
}

export function systemCollection(systems: readonly ManagedSystem[]) {
  return collection(
    'ComputerSystemCollection',
    `${ROOT}/Systems`,
    'Computer System Collection',
    systems.map(systemPath),
  );
}

export function managerCollection(systems: readonly ManagedSystem[]) {
  return collection('ManagerCollection', `${ROOT}/Managers`, 'Manager Collection', systems.map(managerPath));
}

export function chassisCollection(systems: readonly ManagedSystem[]) {
  return collection('ChassisCollection', `${ROOT}/Chassis`, 'Chassis Collection', systems.map(chassisPath));
}

export async function manager(system: ManagedSystem) {
  return {
    ...resource('Manager', managerPath(system), system.id, `BMC of ${system.name}`),
    ManagerType: 'BMC',
    FirmwareVersion: system.firmwareComponent('BMC')?.version ?? null,
    UUID: system.uuid,
    Model: 'bmaas lab BMC',
    PowerState: 'On',
    Status: { State: 'Enabled', Health: 'OK' },
    ...(system.virtualCd ? { VirtualMedia: link(virtualMediaPath(system)) } : {}),
    Links: {
      ManagerForServers: [link(systemPath(system))],
      ManagerForChassis: [link(chassisPath(system))],
    },
  };
}

export function virtualMediaCollection(system: ManagedSystem) {
  const members = system.virtualCd ? [`${virtualMediaPath(system)}/${VIRTUAL_CD_ID}`] : [];
  return collection('VirtualMediaCollection', virtualMediaPath(system), 'Virtual Media Collection', members);
}

/** The virtual CD as VirtualMedia v1_3_0 describes it. */
export function virtualMedia(system: ManagedSystem, cd: VirtualCd) {
  const path = `${virtualMediaPath(system)}/${VIRTUAL_CD_ID}`;
  const { state } = cd;
  return {
    ...resource('VirtualMedia', path, VIRTUAL_CD_ID, 'Virtual CD'),
    MediaTypes: ['CD', 'DVD'],
    Image: state.image,
    ImageName: state.imageName,
    Inserted: state.inserted,
    WriteProtected: state.writeProtected,
    ConnectedVia: state.image === null ? 'NotConnected' : 'URI',
    TransferMethod: 'Upload',
    TransferProtocolType: state.image?.startsWith('https:') ? 'HTTPS' : 'HTTP',
    Status: { State: 'Enabled', Health: 'OK' },
    Actions: {
      '#VirtualMedia.InsertMedia': { target: `${path}/Actions/VirtualMedia.InsertMedia` },
      '#VirtualMedia.EjectMedia': { target: `${path}/Actions/VirtualMedia.EjectMedia` },
    },
  };
}

export async function chassis(system: ManagedSystem) {
  return {
    ...resource('Chassis', chassisPath(system), system.id, `Chassis of ${system.name}`),
    ChassisType: 'RackMount',
    Manufacturer: system.hardware.manufacturer,
    Model: system.hardware.model,
    SerialNumber: system.hardware.serialNumber,
    PowerState: await system.powerState(),
    IndicatorLED: system.indicatorLed,
    Status: { State: 'Enabled', Health: system.health, HealthRollup: system.health },
    Links: {
      ComputerSystems: [link(systemPath(system))],
      ManagedBy: [link(managerPath(system))],
    },
  };
}

export const FIRMWARE_PATH = `${ROOT}/UpdateService/FirmwareInventory`;

export function updateService() {
  return {
    ...resource('UpdateService', `${ROOT}/UpdateService`, 'UpdateService', 'Update Service'),
    ServiceEnabled: true,
    Status: { State: 'Enabled', Health: 'OK' },
    FirmwareInventory: link(FIRMWARE_PATH),
    // No SimpleUpdate: the inventory is read (and changed by the control API), not flashed.
    Actions: {},
  };
}

/** Every firmware component of the service, by its inventory Id (prefixed with the system's when several). */
export function firmwareInventory(
  systems: readonly ManagedSystem[],
): Map<string, { system: ManagedSystem; component: FirmwareComponent & { writeProtected: boolean } }> {
  const inventory = new Map();
  for (const system of systems) {
    for (const component of system.firmware) {
      inventory.set(systems.length === 1 ? component.id : `${system.id}-${component.id}`, { system, component });
    }
  }
  return inventory;
}

export function firmwareCollection(systems: readonly ManagedSystem[]) {
  return collection(
    'SoftwareInventoryCollection',
    FIRMWARE_PATH,
    'Firmware Inventory Collection',
    [...firmwareInventory(systems).keys()].map((id) => `${FIRMWARE_PATH}/${id}`),
  );
}

export function softwareInventory(
  id: string,
  system: ManagedSystem,
  component: FirmwareComponent & { writeProtected: boolean },
) {
  return {
    ...resource('SoftwareInventory', `${FIRMWARE_PATH}/${id}`, id, component.name),
    Version: component.version,
    Updateable: component.updateable ?? true,
    WriteProtected: component.writeProtected,
    Manufacturer: component.manufacturer ?? 'bmaas',
    SoftwareId: component.id,
    Status: { State: 'Enabled', Health: 'OK' },
    RelatedItem: [link(component.id === 'BMC' ? managerPath(system) : systemPath(system))],
  };
}
