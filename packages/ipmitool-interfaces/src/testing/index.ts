export { ipmiSimAvailable, SimulatedBmc, type SimulatedBmcOptions } from './ipmi-sim.js';
