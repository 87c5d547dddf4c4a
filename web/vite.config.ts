// Vite config: esbuild's automatic JSX (no React plugin needed), a dev proxy to the gateway.
import { defineConfig } from "vitest/config";

const gateway = process.env.HERDSMAN_GATEWAY ?? "http://127.0.0.1:2026";

export default defineConfig({
  esbuild: { jsx: "automatic" },
  build: {
    outDir: "dist",
    sourcemap: false,
    chunkSizeWarningLimit: 800,
    rollupOptions: {
      // The SDK's "use client" directives and zod's annotations are harmless in a client bundle.
      onwarn(warning, warn) {
        if (warning.code === "MODULE_LEVEL_DIRECTIVE" || warning.code === "INVALID_ANNOTATION") return;
        warn(warning);
      },
    },
  },
  server: { proxy: { "/api": gateway } },
  test: { environment: "node", include: ["src/**/*.test.ts", "src/**/*.test.tsx"] },
});
