// The lab's Redfish BMC as the world understands Redfish: driven by Debian's python3-sushy
// (the library Ironic's redfish hardware type uses), and every resource checked against the
// DMTF schemas' rules for the properties it carries.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureCertificate } from '@bmaas/pki';
import { type RedfishBmc, SimulatedMachinePower, startRedfishBmc } from '@bmaas/redfish-bmc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { hasPythonModule, runPythonScript } from '../support/python-script.js';

const SCRIPT = readFileSync(new URL('./sushy-check.py', import.meta.url), 'utf8');
const MACS = ['52:54:00:5e:00:01', '52:54:00:5e:00:02'];
const GIB = 2 ** 30;
const ISO = Buffer.from('pretend ISO image '.repeat(512));
// biome-ignore lint/suspicious/noExplicitAny: what the script printed, checked property by property below
type SushyResult = Record<string, any>;

const missing = (await hasPythonModule('sushy')) ? null : 'python3-sushy is not installed (test/debian-packages.txt)';

describe.skipIf(missingPrerequisite('redfish-bmc sushy conformance', missing))('Redfish BMC driven by sushy', () => {
  let bmc: RedfishBmc;
  let power: SimulatedMachinePower;
  let result: SushyResult;
  let pki: string;
  let caFile: string;
  let images: http.Server;
  let imageUrl: string;
  let downloaded: Buffer | undefined;

  beforeAll(async () => {
    // HTTPS with a certificate of a CA of its own, as the lab serves it
    pki = mkdtempSync(join(tmpdir(), 'bmaas-redfish-pki-'));
    const certificate = ensureCertificate({ directory: pki, commonName: 'redfish-bmc', ipAddresses: ['127.0.0.1'] });
    caFile = certificate.caFile;
    power = new SimulatedMachinePower();
    const insert = power.cdDrive.insert.bind(power.cdDrive);
    power.cdDrive.insert = async (file) => {
      downloaded = readFileSync(file);
      await insert(file);
    };
    bmc = await startRedfishBmc({
      tls: { key: readFileSync(certificate.keyFile), cert: readFileSync(certificate.certFile) },
      systems: [
        {
          id: 'lab-1',
          power,
          hardware: {
            serialNumber: 'LAB-0001',
            nics: MACS,
            processors: [
              { model: 'QEMU Virtual CPU', cores: 2, threads: 2, maxSpeedMHz: 2000 },
              { model: 'QEMU Virtual CPU', cores: 2, threads: 2, maxSpeedMHz: 2000 },
            ],
            memoryMiB: [2048, 2048],
            disks: [
              { capacityBytes: 10 * GIB, serialNumber: 'vda-serial' },
              { capacityBytes: 20 * GIB, serialNumber: 'vdb-serial', mediaType: 'SSD' },
            ],
          },
        },
        { id: 'lab-2', power: new SimulatedMachinePower() },
      ],
    });
    bmc.control.setFirmwareVersion('BIOS', '2.3.1', 'lab-1');
    images = http.createServer((req, res) => {
      if (req.url === '/deploy.iso') res.end(ISO);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
    imageUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}/deploy.iso`;
    result = (await runPythonScript(SCRIPT, {
      label: 'sushy',
      timeoutMs: 60_000,
      env: {
        BMC_URL: bmc.url,
        BMC_USERNAME: bmc.username,
        BMC_PASSWORD: bmc.password,
        BMC_SYSTEM: '/redfish/v1/Systems/lab-1',
        BMC_CA: caFile,
        IMAGE_URL: imageUrl,
      },
    })) as SushyResult;
  });

  afterAll(async () => {
    await bmc?.close();
    images?.closeAllConnections();
    await new Promise((resolve) => images?.close(resolve));
    if (pki) rmSync(pki, { recursive: true, force: true });
  });

  it('serves HTTPS that sushy trusts with the CA, and refuses to trust without it', async () => {
    expect(bmc.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const untrusted = await runPythonScript(
      [
        'import json, os, sys, sushy',
        'try:',
        "    sushy.Sushy(os.environ['BMC_URL'] + '/redfish/v1/', username='admin', password='x')",
        "    json.dump('connected', sys.stdout)",
        'except sushy.exceptions.ConnectionError as e:',
        "    json.dump('SSL' if 'CERTIFICATE_VERIFY_FAILED' in str(e) else str(e), sys.stdout)",
      ].join('\n'),
      { label: 'sushy', env: { BMC_URL: bmc.url } },
    );
    expect(untrusted).toBe('SSL');
  });

  it('runs every step', () => {
    expect(result.steps).toEqual([
      'session',
      'read system',
      'power',
      'boot',
      'bios',
      'virtual media',
      'firmware',
      'reauthentication',
    ]);
  });

  it('logs in with a session (X-Auth-Token), not basic auth, and logs in again when the session ended', () => {
    expect(result.session_auth).toBe(true);
    expect(result.sessions).toBe(1);
    expect(result.after_reauth).toBe('Off');
    const logins = bmc.control.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/Sessions'));
    expect(logins.map((r) => r.status)).toEqual([201, 201]);
    expect(bmc.control.requests.some((r) => r.status === 401)).toBe(true);
  });

  it('reads the system: identity, power, health, CPUs, memory, NICs with their MACs, disks', () => {
    expect(result.system).toMatchObject({
      identity: 'lab-1',
      uuid: bmc.control.system('lab-1').uuid,
      power_state: 'Off',
      health: 'OK',
      serial_number: 'LAB-0001',
      bios_version: '2.3.1',
      memory_gib: 4,
      processor_summary_cores: 4, // sushy's processor summary counts threads
      processor_cores: [2, 2],
      macs: MACS,
      simple_storage_disks: [10 * GIB, 20 * GIB],
      storage_drives: [
        ['vda-serial', 10 * GIB],
        ['vdb-serial', 20 * GIB],
      ],
      chassis: ['lab-1'],
      managers: ['lab-1'],
    });
    expect(result.system.reset_types).toEqual([
      'ForceOff',
      'ForceOn',
      'ForceRestart',
      'GracefulRestart',
      'GracefulShutdown',
      'Nmi',
      'On',
      'PowerCycle',
      'PushPowerButton',
    ]);
    expect(result.system.boot_sources).toEqual(['BiosSetup', 'Cd', 'Hdd', 'None', 'Pxe', 'UefiHttp']);
    expect(result.system.boot_modes).toEqual(['Legacy', 'UEFI']);
  });

  it('powers on and off', () => {
    expect(result.after_on).toBe('On');
    expect(result.after_off).toBe('Off');
  });

  it('sets the boot override and mode, and refuses a target the system does not offer', () => {
    expect(result.boot_set).toEqual({ target: 'Pxe', enabled: 'Once', mode: 'Legacy' });
    expect(result.boot_set_again).toEqual({ target: 'Hdd', enabled: 'Continuous', mode: 'UEFI' });
    expect(result.bad_target).not.toBe('accepted');
    // the power on before any override booted the machine's own order; the one after, the continuous override
    expect(power.boots).toEqual([
      { target: 'None', mode: 'UEFI' },
      { target: 'Hdd', mode: 'UEFI' },
    ]);
  });

  it('reads the BIOS and its attribute registry, sets attributes that apply at the next boot', () => {
    expect(result.bios_before).toMatchObject({ ProcTurboMode: 'Enabled', PxeRetryCount: 3 });
    expect(result.bios_pending).toEqual({ ProcTurboMode: 'Disabled', PxeRetryCount: 5 });
    expect(result.bios_apply_times).toEqual(['OnReset']);
    expect(result.bios_registry).toContainEqual(['ProcTurboMode', 'Enumeration', ['Enabled', 'Disabled']]);
    expect(result.bios_registry).toContainEqual(['PxeRetryCount', 'Integer', []]);
    expect(result.bios_registry).toHaveLength(8);
    expect(result.bios_after_boot).toMatchObject({ ProcTurboMode: 'Disabled', PxeRetryCount: 5 });
    expect(result.bios_pending_after_boot).toEqual({});
  });

  it("inserts an image in the manager's virtual CD (the BMC downloads it) and ejects it", () => {
    expect(result.vmedia_before).toEqual({
      identity: 'Cd',
      inserted: false,
      media_types: ['CD', 'DVD'],
      connected_via: 'NotConnected',
    });
    expect(result.vmedia_inserted).toEqual({
      image: imageUrl,
      image_name: 'deploy.iso',
      inserted: true,
      write_protected: true,
      connected_via: 'URI',
    });
    expect(result.vmedia_ejected).toEqual({ image: null, inserted: false, connected_via: 'NotConnected' });
    const inserts = bmc.control.requests.filter((r) => r.path.endsWith('/VirtualMedia.InsertMedia'));
    expect(inserts).toEqual([
      {
        method: 'POST',
        path: '/redfish/v1/Managers/lab-1/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia',
        status: 204,
      },
    ]);
    // what the drive held while inserted was the image itself, and nothing is left of it
    expect(power.cdDrive.medium).toBeUndefined();
    expect(downloaded).toEqual(ISO);
  });

  it('reads the firmware inventory and the BMC firmware version', () => {
    expect(result.firmware).toEqual([
      ['lab-1-BIOS', '2.3.1', true],
      ['lab-1-BMC', '1.0.0', true],
      ['lab-2-BIOS', '1.0.0', true],
      ['lab-2-BMC', '1.0.0', true],
    ]);
    expect(result.manager_firmware).toBe('1.0.0');
  });

  it('every resource follows the DMTF rules for the properties it carries', async () => {
    const problems = await dmtfProblems(bmc, readFileSync(caFile));
    expect(problems).toEqual([]);
  });
});

/**
 * Walks every resource from the service root and lists what breaks the DMTF schemas: the
 * @odata annotations, the properties each schema requires, and the values of the enumerations
 * the service uses (copied from the DMTF schemas of the versions in @odata.type).
 */
async function dmtfProblems(bmc: RedfishBmc, ca: Buffer): Promise<string[]> {
  const auth = `Basic ${Buffer.from(`${bmc.username}:${bmc.password}`).toString('base64')}`;
  const problems: string[] = [];
  const seen = new Set<string>();
  const queue = ['/redfish/v1/'];
  const required: Record<string, string[]> = {
    ServiceRoot: ['Id', 'Name', 'Links'],
    ComputerSystem: ['Id', 'Name'],
    Manager: ['Id', 'Name'],
    Chassis: ['Id', 'Name', 'ChassisType'],
    Session: ['Id', 'Name'],
    SoftwareInventory: ['Id', 'Name'],
  };
  const enums: Record<string, readonly string[]> = {
    PowerState: ['On', 'Off', 'PoweringOn', 'PoweringOff', 'Paused'],
    SystemType: ['Physical', 'Virtual', 'OS', 'PhysicallyPartitioned', 'VirtuallyPartitioned', 'Composed', 'DPU'],
    IndicatorLED: ['Lit', 'Blinking', 'Off'],
    Health: ['OK', 'Warning', 'Critical'],
    HealthRollup: ['OK', 'Warning', 'Critical'],
    State: [
      'Enabled',
      'Disabled',
      'StandbyOffline',
      'StandbySpare',
      'InTest',
      'Starting',
      'Absent',
      'UnavailableOffline',
      'Deferring',
      'Quiesced',
      'Updating',
      'Qualified',
    ],
    BootSourceOverrideEnabled: ['Disabled', 'Once', 'Continuous'],
    BootSourceOverrideMode: ['Legacy', 'UEFI'],
    BootSourceOverrideTarget: [
      'None',
      'Pxe',
      'Floppy',
      'Cd',
      'Usb',
      'Hdd',
      'BiosSetup',
      'Utilities',
      'Diags',
      'UefiShell',
      'UefiTarget',
      'SDCard',
      'UefiHttp',
      'RemoteDrive',
      'UefiBootNext',
      'Recovery',
    ],
    ResetType: [
      'On',
      'ForceOff',
      'GracefulShutdown',
      'GracefulRestart',
      'ForceRestart',
      'Nmi',
      'ForceOn',
      'PushPowerButton',
      'PowerCycle',
      'Suspend',
      'Pause',
      'Resume',
    ],
    ChassisType: [
      'Rack',
      'Blade',
      'Enclosure',
      'StandAlone',
      'RackMount',
      'Card',
      'Cartridge',
      'Row',
      'Pod',
      'Expansion',
      'Sidecar',
      'Zone',
      'Sled',
      'Shelf',
      'Drawer',
      'Module',
      'Component',
      'IPBasedDrive',
      'RackGroup',
      'StorageEnclosure',
      'Other',
    ],
    ManagerType: ['ManagementController', 'EnclosureManager', 'BMC', 'RackManager', 'AuxiliaryController', 'Service'],
    ProcessorType: ['CPU', 'GPU', 'FPGA', 'DSP', 'Accelerator', 'Core', 'Thread', 'OEM'],
    ProcessorArchitecture: ['x86', 'IA-64', 'ARM', 'MIPS', 'Power', 'OEM'],
    MemoryDeviceType: ['DDR', 'DDR2', 'DDR3', 'DDR4', 'DDR4_SDRAM', 'DDR5', 'SDRAM', 'ROM', 'LPDDR4_SDRAM'],
    MemoryType: ['DRAM', 'NVDIMM_N', 'NVDIMM_F', 'NVDIMM_P', 'IntelOptane'],
    MediaType: ['HDD', 'SSD', 'SMR'],
    Protocol: [
      'PCIe',
      'AHCI',
      'UHCI',
      'SAS',
      'SATA',
      'USB',
      'NVMe',
      'FC',
      'iSCSI',
      'FCoE',
      'FCoTR',
      'NVMeOverFabrics',
      'SMB',
      'NFSv3',
      'NFSv4',
      'HTTP',
      'HTTPS',
      'FTP',
      'SFTP',
      'iWARP',
      'RoCE',
      'RoCEv2',
      'OEM',
    ],
    LinkStatus: ['LinkUp', 'NoLink', 'LinkDown'],
    ConnectedVia: ['NotConnected', 'URI', 'Applet', 'Oem'],
    MediaTypes: ['CD', 'Floppy', 'USBStick', 'DVD'],
    TransferMethod: ['Stream', 'Upload'],
    TransferProtocolType: ['CIFS', 'FTP', 'SFTP', 'HTTP', 'HTTPS', 'NFS', 'SCP', 'TFTP', 'OEM'],
    ApplyTime: [
      'Immediate',
      'OnReset',
      'AtMaintenanceWindowStart',
      'InMaintenanceWindowOnReset',
      'OnStartUpdateRequest',
    ],
  };
  const checkValues = (path: string, value: unknown, where: string): void => {
    if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) checkValues(path, v, `${where}[${i}]`);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    for (const [key, v] of Object.entries(value)) {
      const allowable = /^(\w+)@Redfish\.AllowableValues$/.exec(key)?.[1];
      const list = enums[allowable ?? key];
      if (list && typeof v === 'string' && !list.includes(v))
        problems.push(`${path} ${where}.${key}: ${v} is not a ${key}`);
      if (list && allowable && Array.isArray(v)) {
        for (const item of v)
          if (!list.includes(item)) problems.push(`${path} ${where}.${key}: ${item} is not a ${allowable}`);
      }
      if (key === '@odata.id' && typeof v === 'string') {
        if (!v.startsWith('/redfish/v1/')) problems.push(`${path} ${where}: @odata.id ${v} is not a service URI`);
        else if (!v.includes('#')) queue.push(v);
      }
      if (typeof v === 'object') checkValues(path, v, `${where}.${key}`);
    }
  };
  while (queue.length > 0) {
    const path = queue.shift() as string;
    if (seen.has(path)) continue;
    seen.add(path);
    const res = await httpsGet(`${bmc.url}${path}`, auth, ca);
    if (res.status !== 200) {
      problems.push(`${path}: GET answered ${res.status}`);
      continue;
    }
    const body = JSON.parse(res.body) as Record<string, unknown>;
    if (body['@odata.id'] !== path) problems.push(`${path}: @odata.id is ${body['@odata.id']}`);
    const type = /^#(\w+)\.(?:(v\d+_\d+_\d+)\.)?(\w+)$/.exec(String(body['@odata.type']));
    if (!type || type[1] !== type[3]) {
      problems.push(`${path}: @odata.type ${body['@odata.type']} is not #Namespace[.vX_Y_Z].Type`);
      continue;
    }
    const [, namespace, version] = type;
    const isCollection = namespace?.endsWith('Collection');
    if (!isCollection && !version) problems.push(`${path}: ${namespace} without a schema version`);
    if (body['@odata.context'] !== `/redfish/v1/$metadata#${namespace}.${namespace}`) {
      problems.push(`${path}: @odata.context ${body['@odata.context']}`);
    }
    for (const property of isCollection
      ? ['Name', 'Members', 'Members@odata.count']
      : (required[namespace as string] ?? ['Id', 'Name'])) {
      if (!(property in body)) problems.push(`${path}: ${namespace} without its required ${property}`);
    }
    if (isCollection && (body.Members as unknown[]).length !== body['Members@odata.count']) {
      problems.push(`${path}: Members@odata.count is not the number of Members`);
    }
    checkValues(path, body, namespace as string);
  }
  if (seen.size < 25) problems.push(`only ${seen.size} resources reachable from the service root`);
  return problems;
}

function httpsGet(url: string, authorization: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, headers: { Authorization: authorization } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      })
      .on('error', reject);
  });
}
