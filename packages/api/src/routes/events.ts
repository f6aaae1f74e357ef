import type { Router } from 'express';
import { requireResourceMinor } from '../errors.js';
import { onlyQuery } from '../list-query.js';
import { type RouteDeps, resourceRouter } from '../route-deps.js';
import { compileSchema, UUID_PATTERN } from '../validation.js';
import { Minor } from '../versions.js';

const MAC = '^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$';
const nullableUuid = { anyOf: [{ type: 'null' }, { type: 'string', pattern: UUID_PATTERN.source }] };

/** Ironic's external event schema (network port events from Neutron). */
const checkEvents = compileSchema<{ events: Array<Record<string, unknown>> }>('events', {
  type: 'object',
  properties: {
    events: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        properties: {
          event: { type: 'string', enum: ['network.bind_port', 'network.unbind_port', 'network.delete_port'] },
          port_id: { type: 'string', pattern: UUID_PATTERN.source },
          mac_address: { type: 'string', pattern: MAC },
          status: { type: 'string' },
          device_id: nullableUuid,
          'binding:host_id': nullableUuid,
          'binding:vnic_type': { type: ['string', 'null'] },
        },
        required: ['event', 'port_id', 'mac_address', 'status'],
        additionalProperties: false,
      },
    },
  },
  required: ['events'],
  additionalProperties: false,
});

/**
 * POST /v1/events (1.54): external events. Like Ironic, whose network
 * interfaces act on none of them, they are validated and logged, then 204.
 */
export function eventsRouter(_deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  router.post('/v1/events', onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.EVENTS);
    const { events } = checkEvents(req.body);
    for (const event of events) req.context.logger.info('external event received', { event });
    res.status(204).end();
  });
  allow('/v1/events', ['POST']);
  return router;
}
