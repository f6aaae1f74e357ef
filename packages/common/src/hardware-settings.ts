/**
 * A BIOS setting as the conductor caches it and the API shows it (Ironic's
 * BIOSSetting: the name and value, and the registry fields of 1.74 where the
 * BMC has an attribute registry, null otherwise).
 */
export interface BiosSetting {
  name: string;
  value: string | null;
  attributeType: string | null;
  allowableValues: string[] | null;
  lowerBound: number | null;
  upperBound: number | null;
  minLength: number | null;
  maxLength: number | null;
  readOnly: boolean | null;
  resetRequired: boolean | null;
  unique: boolean | null;
}

/** A firmware component as the conductor caches it (Ironic's FirmwareComponent, 1.86; vendor, model, serial 1.114). */
export interface FirmwareComponent {
  component: string;
  initialVersion: string;
  currentVersion: string;
  lastVersionFlashed: string | null;
  vendor: string | null;
  model: string | null;
  serialNumber: string | null;
}
