// Picks the page from the path, marks it in the menu and keeps the tenant
// field in the browser's storage.
import { getTenant, setTenant } from './api.js';
import { queryPage } from './query.js';
import { cardinalityPage } from './cardinality.js';
import { statusPage } from './status.js';
import { rulesPage, alertsPage } from './rules.js';

const pages = {
  query: queryPage,
  cardinality: cardinalityPage,
  status: statusPage,
  rules: rulesPage,
  alerts: alertsPage,
};

function pageOf(path) {
  if (path.startsWith('/cardinality')) return 'cardinality';
  if (path.startsWith('/status')) return 'status';
  if (path.startsWith('/rules')) return 'rules';
  if (path.startsWith('/alerts')) return 'alerts';
  return 'query';
}

const tenant = document.getElementById('tenant');
tenant.value = getTenant();
tenant.addEventListener('change', () => {
  setTenant(tenant.value.trim());
  location.reload();
});

const name = pageOf(location.pathname);
for (const a of document.querySelectorAll('header nav a')) {
  a.classList.toggle('active', a.dataset.page === name);
}
const root = document.getElementById('page');
pages[name](root);
