// Loaded first, before the body is parsed: counts Content-Security-Policy violations from
// the very start (an inline style attribute would be one), where tests/tests/dialog.rs
// looks. The page itself must cause none.
'use strict';
document.addEventListener('securitypolicyviolation', () => {
  const root = document.documentElement;
  root.dataset.cspViolations = String(Number(root.dataset.cspViolations || 0) + 1);
});
