/** Plain records as the stores return them (camelCase). */

export type JsonObject = Record<string, unknown>;

export interface NodeRecord {
  id: number;
  uuid: string;
  name: string | null;
  driver: string;
  bootInterface: string;
  deployInterface: string;
  powerInterface: string;
  managementInterface: string;
  inspectInterface: string;
  driverInfo: JsonObject;
  driverInternalInfo: JsonObject;
  instanceInfo: JsonObject;
  instanceUuid: string | null;
  properties: JsonObject;
  extra: JsonObject;
  provisionState: string;
  targetProvisionState: string | null;
  provisionUpdatedAt: Date | null;
  powerState: string | null;
  targetPowerState: string | null;
  lastError: string | null;
  maintenance: boolean;
  maintenanceReason: string | null;
  reservation: string | null;
  conductorAffinity: number | null;
  conductorGroup: string;
  resourceClass: string | null;
  description: string | null;
  automatedClean: boolean | null;
  inspectionStartedAt: Date | null;
  inspectionFinishedAt: Date | null;
  createdAt: Date;
  updatedAt: Date | null;
}

export interface PortRecord {
  id: number;
  uuid: string;
  address: string;
  nodeId: number;
  nodeUuid: string;
  pxeEnabled: boolean;
  physicalNetwork: string | null;
  localLinkConnection: JsonObject;
  extra: JsonObject;
  name: string | null;
  createdAt: Date;
  updatedAt: Date | null;
}

export interface ConductorRecord {
  id: number;
  hostname: string;
  conductorGroup: string;
  online: boolean;
  drivers: string[];
  createdAt: Date;
  updatedAt: Date | null;
}

export type InterfaceType = 'boot' | 'deploy' | 'power' | 'management' | 'inspect';
export const INTERFACE_TYPES: readonly InterfaceType[] = ['boot', 'deploy', 'power', 'management', 'inspect'];

export interface HardwareInterfaceRecord {
  conductorId: number;
  hardwareType: string;
  interfaceType: InterfaceType;
  interfaceName: string;
  isDefault: boolean;
}

/** What the boot path needs from a MAC lookup, in one indexed query. */
export interface BootLookupRecord {
  nodeId: number;
  nodeUuid: string;
  provisionState: string;
  driver: string;
  conductorGroup: string;
}
