// The OData annotations every Redfish resource carries, and the schema versions this service
// claims: each resource is rendered with the properties its DMTF schema version defines.

export const ROOT = '/redfish/v1';

/** Namespace -> the version of its DMTF schema the service's resources follow. */
export const SCHEMA_VERSIONS = {
  ServiceRoot: 'v1_5_0',
  ComputerSystem: 'v1_13_0',
  Processor: 'v1_7_0',
  Memory: 'v1_9_0',
  EthernetInterface: 'v1_5_1',
  SimpleStorage: 'v1_3_0',
  Storage: 'v1_8_0',
  Drive: 'v1_9_0',
  Bios: 'v1_1_0',
  Manager: 'v1_10_0',
  Chassis: 'v1_14_0',
  SessionService: 'v1_1_8',
  Session: 'v1_3_0',
  UpdateService: 'v1_8_0',
  SoftwareInventory: 'v1_3_0',
  MessageRegistryFile: 'v1_1_0',
  VirtualMedia: 'v1_3_0',
} as const;
export type Namespace = keyof typeof SCHEMA_VERSIONS;

/** Collection namespaces (unversioned in the DMTF schemas). */
export const COLLECTIONS = [
  'ComputerSystemCollection',
  'ProcessorCollection',
  'MemoryCollection',
  'EthernetInterfaceCollection',
  'SimpleStorageCollection',
  'StorageCollection',
  'ManagerCollection',
  'ChassisCollection',
  'SessionCollection',
  'SoftwareInventoryCollection',
  'MessageRegistryFileCollection',
  'VirtualMediaCollection',
] as const;
export type CollectionNamespace = (typeof COLLECTIONS)[number];

export const link = (path: string) => ({ '@odata.id': path });

/** The head of a resource of `namespace` at `path`. */
export function resource(namespace: Namespace, path: string, id: string, name: string): Record<string, unknown> {
  return {
    '@odata.context': `${ROOT}/$metadata#${namespace}.${namespace}`,
    '@odata.id': path,
    '@odata.type': `#${namespace}.${SCHEMA_VERSIONS[namespace]}.${namespace}`,
    Id: id,
    Name: name,
  };
}

export function collection(namespace: CollectionNamespace, path: string, name: string, members: readonly string[]) {
  return {
    '@odata.context': `${ROOT}/$metadata#${namespace}.${namespace}`,
    '@odata.id': path,
    '@odata.type': `#${namespace}.${namespace}`,
    Name: name,
    'Members@odata.count': members.length,
    Members: members.map(link),
  };
}

/** $metadata: the CSDL document referencing the DMTF schemas of every namespace served. */
export function metadataDocument(): string {
  const namespaces = [
    ...Object.entries(SCHEMA_VERSIONS).flatMap(([ns, version]) => [ns, `${ns}.${version}`]),
    ...COLLECTIONS,
  ];
  const references = namespaces
    .map((ns) => {
      const file = ns.split('.')[0];
      return `  <edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/${file}_v1.xml">\n    <edmx:Include Namespace="${ns}"/>\n  </edmx:Reference>`;
    })
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">
${references}
  <edmx:DataServices>
    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">
      <EntityContainer Name="Service" Extends="ServiceRoot.${SCHEMA_VERSIONS.ServiceRoot}.ServiceContainer"/>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>
`;
}
