export { ACTIONS, type Action, HardwareInspectionFailure, type RuleSubject } from './actions.js';
export {
  type ApplyOptions,
  applyRules,
  INSPECTION_PHASES,
  type InspectionRule,
  type MaskSecrets,
  parseBuiltInRules,
  type RuleStep,
  validateRule,
} from './engine.js';
export { formatString, interpolate, pythonStr } from './interpolation.js';
export { OPERATORS, type Operator, parseOperator } from './operators.js';
