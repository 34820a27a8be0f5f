/**
 * The one wait of the tests: poll a condition until it holds, never sleep a fixed time hoping it
 * does. It lives in service-kit's `/testing` export so packages' own tests wait the same way;
 * this re-export keeps test/'s imports short.
 */
export { eventually } from "@metaharness/service-kit/testing";
