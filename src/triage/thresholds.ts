export { THRESHOLDS } from '../rules/thresholds.js';
