/** Whether the gateway answers, checked now and then (more often while it is down). */
import { useEffect, useState } from "react";
import { health } from "../api/rest";

export function useGatewayUp(): boolean {
  const [up, setUp] = useState(true);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout>;
    const check = async () => {
      const ok = await health();
      if (stopped) return;
      setUp(ok);
      timer = setTimeout(check, ok ? 15_000 : 2_000);
    };
    check();
    return () => { stopped = true; clearTimeout(timer); };
  }, []);
  return up;
}
