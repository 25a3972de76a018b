// Server status and load: polls GET /health (the status dot turns red as soon as the server
// stops answering) and GET /metrics for the header chip: CPU use (from the deltas of
// process_cpu_seconds_total), resident memory, requests generating and queued.
import { fetchHealth, fetchMetrics } from './api.js';

const POLL_MS = 2500;

export function cpuPercent(previous, current) {
  if (!previous) return null;
  const wall = (current.at - previous.at) / 1000;
  const cpu = current.process_cpu_seconds_total - previous.process_cpu_seconds_total;
  return wall > 0 && Number.isFinite(cpu) ? Math.max(0, (100 * cpu) / wall) : null;
}

export function monitorText(metrics, cpu, runtime) {
  const parts = [];
  if (cpu !== null && cpu !== undefined) parts.push(`CPU ${Math.round(cpu)}%`);
  if (metrics.process_resident_memory_bytes) parts.push(`${(metrics.process_resident_memory_bytes / (1 << 30)).toFixed(2)} GB`);
  parts.push(`${metrics.qvl_active_requests || 0} active`);
  parts.push(`${metrics.qvl_queue_depth || 0} queued`);
  if (runtime && runtime.weights) parts.push(`${runtime.weights}${runtime.threads ? ` · ${runtime.threads} threads` : ''}`);
  return parts.join(' · ');
}

// hooks: { onReachable(ok), onMetrics(metrics), getRuntime() }; elements: { chip }.
export function startMonitor({ chip, onReachable, getRuntime }) {
  let previous = null;
  let timer = 0;
  let latest = null;
  async function tick() {
    clearTimeout(timer);
    try {
      const ready = await fetchHealth();
      onReachable(ready ? 'ready' : 'loading');
      const metrics = await fetchMetrics();
      metrics.at = performance.now();
      const cpu = cpuPercent(previous, metrics);
      previous = metrics;
      latest = metrics;
      chip.textContent = monitorText(metrics, cpu, getRuntime());
      chip.hidden = false;
      chip.dataset.active = String(metrics.qvl_active_requests || 0);
      chip.dataset.queued = String(metrics.qvl_queue_depth || 0);
    } catch (error) {
      if (error.kind === 'network') {
        onReachable('error');
        chip.hidden = true;
        previous = null;
      }
    }
    timer = setTimeout(tick, document.hidden ? POLL_MS * 4 : POLL_MS);
  }
  document.addEventListener('visibilitychange', () => { if (!document.hidden) tick(); });
  tick();
  return { now: tick, queued: () => (latest ? latest.qvl_queue_depth || 0 : 0), refresh: async () => { await tick(); return latest; } };
}
