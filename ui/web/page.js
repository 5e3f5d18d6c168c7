// The phone page's live updates: a long poll on /changes; when the waiting set changes,
// the list is fetched again and put in place. The page works without this script.

const POLL_RETRY_MS = 5000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function refresh() {
  const response = await fetch('/', { cache: 'no-store', credentials: 'same-origin' });
  if (!response.ok) {
    location.reload();
    return null;
  }
  const doc = new DOMParser().parseFromString(await response.text(), 'text/html');
  const fresh = doc.getElementById('requests');
  const list = document.getElementById('requests');
  if (!fresh || !list) return null;
  list.replaceWith(document.adoptNode(fresh));
  document.title = doc.title;
  return fresh.dataset.version;
}

async function poll(version) {
  for (;;) {
    try {
      const response = await fetch(`/changes?since=${encodeURIComponent(version)}`, {
        cache: 'no-store',
        credentials: 'same-origin',
      });
      if (response.status === 401 || response.status === 429) {
        location.reload();
        return;
      }
      if (!response.ok) {
        await sleep(POLL_RETRY_MS);
        continue;
      }
      const now = (await response.text()).trim();
      if (now !== version) version = (await refresh()) ?? now;
    } catch {
      await sleep(POLL_RETRY_MS);
    }
  }
}

const list = document.getElementById('requests');
if (list?.dataset.version) poll(list.dataset.version);
