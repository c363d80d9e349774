/** The 401 `detail` strings of the contract (contract-v3 §2.3, §2.4; contract-v1 §4), as the tests expect them. */
export const NO_TOKEN = 'No access token provided';
export const INVALID = 'Invalid JWT';
export const MISSING_WORKSPACE = 'Invalid JWT scope: peer/session token missing workspace';
export const ADMIN_ONLY = 'Resource requires admin privileges';
export const NOT_PERMITTED = 'JWT not permissioned for this resource';
export const UNAUTHORIZED = 'Unauthorized access to resource';
export const APP_ID_MISSING = 'App ID not found in query parameter or JWT';
export const USER_ID_MISSING = 'User ID not found in query parameter or JWT';
