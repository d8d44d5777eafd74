// The same mark as Osprey's chat view (ui/src/ipc.ts reportPainted): defined by the paint probe
// only when the window was started with OSPREY_PAINT_PROBE=1.
globalThis.__OSPREY_PAINT_PROBE__?.();
