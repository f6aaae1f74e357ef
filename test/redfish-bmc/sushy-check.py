# Drives a Redfish service with sushy (Debian python3-sushy, the library Ironic's redfish
# hardware type is built on), as Ironic would, and prints what it read as JSON.
# Environment: BMC_URL, BMC_USERNAME, BMC_PASSWORD, BMC_SYSTEM (a system's @odata.id),
# BMC_CA (the CA certificate an HTTPS service's certificate must chain to), IMAGE_URL (an
# image the virtual CD is given).
import json
import os
import sys

import sushy
from sushy.resources.registry import message_registry_file

url = os.environ['BMC_URL']
root = sushy.Sushy(url + '/redfish/v1/', username=os.environ['BMC_USERNAME'],
                   password=os.environ['BMC_PASSWORD'], verify=os.environ['BMC_CA'])
out = {'redfish_version': root.redfish_version, 'steps': []}


def step(name):
    out['steps'].append(name)


def values(items):
    return sorted(str(getattr(v, 'value', v)) for v in items)


# The session sushy opened (auth "auto": a session first, basic auth only if that fails).
session_service = root.get_session_service()
out['sessions'] = len(session_service.sessions.get_members())
out['session_auth'] = root._auth._session_key is not None
step('session')

system = root.get_system(os.environ['BMC_SYSTEM'])
out['system'] = {
    'identity': system.identity,
    'uuid': system.uuid,
    'power_state': str(system.power_state.value),
    'health': str(system.status.health.value),
    'reset_types': values(system.get_allowed_reset_system_values()),
    'boot_sources': values(system.get_allowed_system_boot_source_values()),
    'boot_modes': sorted(system.json['Boot']['BootSourceOverrideMode@Redfish.AllowableValues']),
    'manufacturer': system.manufacturer,
    'serial_number': system.serial_number,
    'bios_version': system.bios_version,
    'memory_gib': system.memory_summary.size_gib,
    'processor_summary_cores': system.processors.summary.count,
    'processor_cores': [p.total_cores for p in system.processors.get_members()],
    'macs': sorted(system.ethernet_interfaces.summary.keys()),
    'simple_storage_disks': sorted(system.simple_storage.disks_sizes_bytes),
    'storage_drives': sorted(
        (d.serial_number, d.capacity_bytes)
        for s in system.storage.get_members() for d in s.drives),
    'chassis': [c.identity for c in system.chassis],
    'managers': [m.identity for m in system.managers],
}
step('read system')

system.reset_system(sushy.RESET_ON)
system.refresh()
out['after_on'] = str(system.power_state.value)
system.reset_system(sushy.RESET_FORCE_OFF)
system.refresh()
out['after_off'] = str(system.power_state.value)
step('power')

system.set_system_boot_options(sushy.BOOT_SOURCE_TARGET_PXE,
                               enabled=sushy.BOOT_SOURCE_ENABLED_ONCE,
                               mode=sushy.BOOT_SOURCE_MODE_BIOS)
system.refresh()
out['boot_set'] = {
    'target': str(system.boot.target.value),
    'enabled': str(system.boot.enabled.value),
    'mode': str(system.boot.mode.value),
}
system.set_system_boot_source(sushy.BOOT_SOURCE_TARGET_HDD,
                              enabled=sushy.BOOT_SOURCE_ENABLED_CONTINUOUS,
                              mode=sushy.BOOT_SOURCE_MODE_UEFI)
system.refresh()
out['boot_set_again'] = {
    'target': str(system.boot.target.value),
    'enabled': str(system.boot.enabled.value),
    'mode': str(system.boot.mode.value),
}
try:
    system.set_system_boot_options(target='Floppy')
    out['bad_target'] = 'accepted'
except (sushy.exceptions.InvalidParameterValueError, sushy.exceptions.BadRequestError) as e:
    out['bad_target'] = type(e).__name__
step('boot')

bios = system.bios
out['bios_before'] = dict(bios.attributes)
bios.set_attributes({'ProcTurboMode': 'Disabled', 'PxeRetryCount': 5})
bios.refresh()
out['bios_pending'] = dict(bios.pending_attributes)
out['bios_apply_times'] = values(bios.supported_apply_times or [])
# The registry as bios.get_attribute_registry() finds it, through the file the service lists
# (that method itself first loads sushy's packaged standard registries, which Debian's
# python3-sushy 4.3.3 does not ship: it fails there whatever the service).
registry_file = message_registry_file.MessageRegistryFile(
    root._conn, '/redfish/v1/Registries/' + bios.json['AttributeRegistry'],
    redfish_version=root.redfish_version)
registry = registry_file.get_attribute_registry('en', None)
out['bios_registry'] = registry and sorted(
    [a.name, a.attribute_type, [v['ValueName'] for v in (a.allowable_values or [])]]
    for a in registry.registry_entries.attributes)
system.reset_system(sushy.RESET_ON)
bios.refresh(force=True)
out['bios_after_boot'] = dict(bios.attributes)
out['bios_pending_after_boot'] = dict(bios.pending_attributes)
system.reset_system(sushy.RESET_FORCE_OFF)
step('bios')

# Virtual media as Ironic's redfish-virtual-media finds it: through the system's manager.
manager = system.managers[0]
cd = manager.virtual_media.get_members()[0]
out['vmedia_before'] = {'identity': cd.identity, 'inserted': cd.inserted,
                        'media_types': values(cd.media_types),
                        'connected_via': str(cd.connected_via.value)}
cd.insert_media(os.environ['IMAGE_URL'], inserted=True, write_protected=True)
cd.refresh(force=True)
out['vmedia_inserted'] = {'image': cd.image, 'image_name': cd.image_name, 'inserted': cd.inserted,
                          'write_protected': cd.write_protected,
                          'connected_via': str(cd.connected_via.value)}
cd.eject_media()
cd.refresh(force=True)
out['vmedia_ejected'] = {'image': cd.image, 'inserted': cd.inserted,
                         'connected_via': str(cd.connected_via.value)}
step('virtual media')

update = root.get_update_service()
out['firmware'] = sorted(
    (fw.identity, fw.version, fw.updateable) for fw in update.firmware_inventory.get_members())
out['manager_firmware'] = system.managers[0].firmware_version
step('firmware')

# A session that ended (as after the BMC's idle timeout): sushy logs in again on the 401.
for member in session_service.sessions.get_members():
    member.delete()
system.refresh()
out['after_reauth'] = str(system.power_state.value)
step('reauthentication')

json.dump(out, sys.stdout)
