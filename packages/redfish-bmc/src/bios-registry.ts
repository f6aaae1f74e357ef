// The BIOS attribute registry: what each BIOS attribute may hold. The service publishes it
// (Registries, an AttributeRegistry per system, named by the Bios resource's AttributeRegistry)
// and checks pending settings against it.
import type { BiosValue } from './managed-system.js';
import { collection, ROOT, resource } from './odata.js';
import { valueNotInList, valueTypeError } from './redfish-error.js';

export interface BiosAttributeRule {
  /** The values an Enumeration attribute takes. */
  values?: readonly string[];
  /** Bounds of an Integer attribute. */
  lowerBound?: number;
  upperBound?: number;
}

/** Rules of the default attributes (DEFAULT_BIOS_ATTRIBUTES). */
export const DEFAULT_BIOS_RULES: Readonly<Record<string, BiosAttributeRule>> = {
  BootMode: { values: ['Uefi', 'Bios'] },
  ProcTurboMode: { values: ['Enabled', 'Disabled'] },
  ProcVirtualization: { values: ['Enabled', 'Disabled'] },
  SriovGlobalEnable: { values: ['Enabled', 'Disabled'] },
  EmbeddedSata: { values: ['AhciMode', 'RaidMode', 'Off'] },
  PxeRetryCount: { lowerBound: 0, upperBound: 10 },
  SecureBoot: { values: ['Enabled', 'Disabled'] },
};

/** Throws the Redfish error for a value the registry does not allow (the type is checked before). */
export function checkBiosValue(name: string, value: BiosValue, rule: BiosAttributeRule | undefined): void {
  if (!rule) return;
  if (rule.values && !rule.values.includes(String(value)))
    throw valueNotInList(`Attributes.${name}`, value, rule.values);
  if (typeof value === 'number') {
    const tooLow = rule.lowerBound !== undefined && value < rule.lowerBound;
    const tooHigh = rule.upperBound !== undefined && value > rule.upperBound;
    if (!Number.isInteger(value) || tooLow || tooHigh) throw valueTypeError(`Attributes.${name}`, value);
  }
}

export const REGISTRIES_PATH = `${ROOT}/Registries`;
const registryFilePath = (id: string) => `${REGISTRIES_PATH}/${id}`;
/** Where the registry document itself is (the file's Location Uri). */
export const registryDocumentPath = (id: string) => `${REGISTRIES_PATH}/${id}/${id}.json`;

export function registryFileCollection(ids: readonly string[]) {
  return collection(
    'MessageRegistryFileCollection',
    REGISTRIES_PATH,
    'Registry File Collection',
    ids.map(registryFilePath),
  );
}

export function registryFile(id: string) {
  return {
    ...resource('MessageRegistryFile', registryFilePath(id), id, 'BIOS Attribute Registry File'),
    Languages: ['en'],
    Registry: id,
    Location: [{ Language: 'en', Uri: registryDocumentPath(id) }],
  };
}

export function attributeRegistry(
  id: string,
  system: { name: string; hardware: { model: string }; biosDefaults: Readonly<Record<string, BiosValue>> },
  rules: Readonly<Record<string, BiosAttributeRule>>,
) {
  return {
    '@odata.type': '#AttributeRegistry.v1_3_0.AttributeRegistry',
    Id: id,
    Name: `BIOS Attribute Registry of ${system.name}`,
    Language: 'en',
    OwningEntity: 'bmaas',
    RegistryVersion: '1.0.0',
    SupportedSystems: [{ ProductName: system.hardware.model, SystemId: system.name }],
    RegistryEntries: {
      Attributes: Object.entries(system.biosDefaults).map(([name, value]) => {
        const rule = rules[name] ?? {};
        const type = rule.values
          ? 'Enumeration'
          : typeof value === 'number'
            ? 'Integer'
            : typeof value === 'boolean'
              ? 'Boolean'
              : 'String';
        return {
          AttributeName: name,
          DisplayName: name,
          Type: type,
          DefaultValue: value,
          ReadOnly: false,
          ResetRequired: true,
          ...(rule.values ? { Value: rule.values.map((v) => ({ ValueName: v, ValueDisplayName: v })) } : {}),
          ...(rule.lowerBound !== undefined ? { LowerBound: rule.lowerBound } : {}),
          ...(rule.upperBound !== undefined ? { UpperBound: rule.upperBound } : {}),
        };
      }),
    },
  };
}
