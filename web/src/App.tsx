/** The workspace: threads on the left, the conversation with its sub-agent cards and interrupts in the middle, files on the right. */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import { ASSISTANT_ID, client } from "./api/client";
import { cancelSubagent, getStepEstimate, restoreFiles, uploadFiles, type StepEstimate } from "./api/rest";
import { getSkills } from "./api/settings";
import { Composer } from "./components/Composer";
import { RunBadge } from "./components/RunBadge";
import { RunDetail } from "./components/RunDetail";
import { runOutcome, stoppedAnswer } from "./state/progress";
import { browserLanguage, LangContext, threadLanguage } from "./state/lang";
import { ScheduledPanel } from "./components/ScheduledPanel";
import { StartScreen } from "./components/StartScreen";
import { ErrorBanner } from "./components/ErrorBanner";
import { FilesPanel } from "./components/FilesPanel";
import { PreviewPanel } from "./components/PreviewPanel";
import { TraceView } from "./components/TraceView";
import { InterruptPanel } from "./components/InterruptPanel";
import { MessageList } from "./components/MessageList";
import type { MessageActions } from "./components/MessageView";
import { checkpointBefore } from "./state/branch";
import { ModelPicker } from "./components/ModelPicker";
import { AgentPicker } from "./components/AgentPicker";
import type { AgentRecord } from "./state/agents";
import { Settings } from "./components/Settings";
import { ThreadList } from "./components/ThreadList";
import { TodoList, type Todo } from "./components/TodoList";
import { useGatewayUp } from "./state/health";
import { megabytes, useUploadLimit } from "./state/limits";
import { messageText, writtenFiles } from "./state/messages";
import { currentDraft, draftKey, isDraftEvent, type Draft } from "./state/drafts";
import { DraftCall } from "./components/DraftCall";
import { applyTaskEvent, isTaskEvent, tasksFromUsage, type Tasks } from "./state/tasks";
import { isPreviewEvent } from "./state/preview";
import { agentChoices, type SkillChoice } from "./state/slash";
import { useThreadParam } from "./state/url";

interface ThreadValues {
  messages: Message[];
  title?: string;
  todos?: Todo[];
  usage?: Record<string, Record<string, unknown>>;
  /** What the completion check still found when the latest run ended (texts, or findings with a `rule`). */
  completion_unresolved?: unknown[];
}

const STREAM_MODES = ["values", "messages-tuple", "custom"] as const;

function describeError(error: unknown): string {
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
  if (/Failed to fetch|NetworkError|fetch failed/i.test(text)) return "the gateway cannot be reached (is it running?)";
  return text;
}

function newId(): string {
  return `web-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

export function App() {
  const [threadId, setThreadId] = useThreadParam();
  const [model, setModel] = useState("");
  const [agent, setAgent] = useState(ASSISTANT_ID);
  const [agents, setAgents] = useState<AgentRecord[]>([]);
  const [errors, setErrors] = useState<string[]>([]);
  const [notice, setNotice] = useState("");
  const [live, setLive] = useState<Record<string, Tasks>>({});
  const [threadsKey, setThreadsKey] = useState(0);
  const [filesKey, setFilesKey] = useState(0);
  const [traceOpen, setTraceOpen] = useState(false);
  const [previewOpen, setPreviewOpen] = useState(false);
  // the latest port a run's `preview` event announced: a badge on the Preview button until it is opened
  const [announced, setAnnounced] = useState<{ thread: string; port: number; n: number; seen: boolean } | null>(null);
  const previewShown = useRef(false);
  previewShown.current = previewOpen;
  const [shownFile, setShownFile] = useState<{ path: string; n: number } | null>(null);
  const [skills, setSkills] = useState<SkillChoice[]>([]);
  const [fill, setFill] = useState<{ text: string; n: number; skills?: string[] } | undefined>(undefined);
  /** How the latest run of this page ended, beyond the thread's state: its error, or a stop. */
  const [ended, setEnded] = useState<{ error?: string; stopped?: boolean }>({});
  /** The latest draft of a tool call being written (the embedded model sends its calls whole). */
  const [draft, setDraft] = useState<Draft | null>(null);
  const shownMessages = useRef<Message[]>([]);
  /** How long a model step of the lead's model takes here, from the gateway (refreshed after each run). */
  const [estimate, setEstimate] = useState<StepEstimate | null>(null);
  const [estimateKey, setEstimateKey] = useState(0);
  const runId = useRef<string | null>(null);
  const threadRef = useRef(threadId);
  threadRef.current = threadId;
  const gatewayUp = useGatewayUp();
  const maxUpload = useUploadLimit(gatewayUp);

  // When the gateway is back, drop the errors its absence caused and load what failed to load.
  const wasUp = useRef(true);
  useEffect(() => {
    if (gatewayUp && !wasUp.current) {
      setErrors((es) => es.filter((e) => !/reach|connect|fetch/i.test(e)));
      setThreadsKey((k) => k + 1);
      setFilesKey((k) => k + 1);
    }
    wasUp.current = gatewayUp;
  }, [gatewayUp]);

  const addError = useCallback((e: string) => setErrors((es) => (es.includes(e) ? es : [...es, e])), []);

  // The skills there are, for the start screen and the composer's / menu (none when that fails).
  useEffect(() => {
    getSkills()
      .then((r) => setSkills(r.skills_enabled ? r.skills.filter((k) => k.status === "enabled") : []))
      .catch(() => setSkills([]));
  }, [gatewayUp, threadsKey]);

  const stream = useStream<ThreadValues>({
    client,
    assistantId: agent,
    threadId,
    onThreadId: setThreadId,
    reconnectOnMount: true,
    onCustomEvent: (data, options) => {
      const tid = threadRef.current;
      // the lead's own calls (a sub-agent's drafts come under a tools:<id> namespace)
      if (isDraftEvent(data) && !options?.namespace?.length) setDraft({ ...data, key: draftKey(shownMessages.current) });
      if (tid && isPreviewEvent(data) && data.thread_id === tid) {
        setAnnounced((a) => ({ thread: tid, port: data.port, n: (a?.n ?? 0) + 1, seen: previewShown.current }));
      }
      if (tid && isTaskEvent(data)) setLive((all) => ({ ...all, [tid]: applyTaskEvent(all[tid] ?? {}, data, Date.now()) }));
    },
    onCreated: (meta) => {
      runId.current = meta.run_id;
      setThreadsKey((k) => k + 1);
    },
    onFinish: () => {
      setEstimateKey((k) => k + 1);
      setThreadsKey((k) => k + 1);
      setFilesKey((k) => k + 1);
    },
    onError: (error) => {
      addError(`The run failed: ${describeError(error)}`);
      setEnded({ error: describeError(error) });
    },
  });

  const estimateModel = model && agent === ASSISTANT_ID ? model : undefined; // a custom agent's: the lead's
  useEffect(() => {
    getStepEstimate(estimateModel).then(setEstimate, () => setEstimate(null));
  }, [estimateModel, estimateKey, gatewayUp]);

  const messages = stream.messages;
  shownMessages.current = messages;
  const writing = currentDraft(draft, messages, stream.isLoading);
  const values = stream.values as ThreadValues | undefined;
  const tasks = useMemo(
    () => ({ ...tasksFromUsage(values?.usage), ...(threadId ? live[threadId] : {}) }),
    [values?.usage, live, threadId],
  );
  const written = useMemo(() => writtenFiles(messages), [messages]);
  /** The language of the harness's words on the page: the thread's (its latest request's), else the browser's. */
  const lang = useMemo(() => threadLanguage(messages, browserLanguage()), [messages]);
  const submitOptions = () => ({
    streamMode: [...STREAM_MODES],
    streamResumable: true,
    // a custom agent runs on its own model; the picker is the built-in agent's
    config: model && agent === ASSISTANT_ID ? { configurable: { model_name: model } } : undefined,
    metadata: model && agent === ASSISTANT_ID ? { model_name: model } : undefined,
  });

  const send = (text: string) => {
    setNotice("");
    setEnded({});
    const message = { type: "human" as const, content: text, id: newId() };
    stream.submit(
      { messages: [message] },
      { ...submitOptions(), optimisticValues: (prev) => ({ ...prev, messages: [...(prev.messages ?? []), message] }) },
    );
  };

  // Edit and regenerate: send from the checkpoint before the message, a new branch of the thread.
  const latest = useRef({ messages, submit: stream.submit, submitOptions });
  latest.current = { messages, submit: stream.submit, submitOptions };
  const actions = useMemo<MessageActions>(() => {
    const branch = async (index: number, text: string) => {
      const tid = threadRef.current;
      const { messages: current, submit, submitOptions: options } = latest.current;
      if (!tid) return;
      try {
        const history = await client.threads.getHistory(tid, { limit: 200 });
        const checkpoint = checkpointBefore(history, index, current);
        if (!checkpoint) throw new Error("no checkpoint holds the conversation before that message");
        const message = { type: "human" as const, content: text, id: newId() };
        submit(
          { messages: [message] },
          { ...options(), checkpoint, optimisticValues: (prev) => ({ ...prev, messages: [...current.slice(0, index), message] }) },
        );
      } catch (e) {
        addError(`Could not branch from that message: ${describeError(e)}`);
      }
    };
    return {
      edit: (index, text) => void branch(index, text),
      regenerate: (index) => void branch(index, messageText(latest.current.messages[index])),
    };
  }, [addError]);

  const resume = (value: unknown) => {
    stream.submit(undefined, { ...submitOptions(), command: { resume: value } });
  };

  const stop = async () => {
    const tid = threadRef.current;
    const rid = runId.current ?? (tid ? sessionStorage.getItem(`lg:stream:${tid}`) : null);
    // The gateway stops the run first (and keeps the words of the answer said so far), so what
    // the page reads back after its stream ends is the thread as the stop left it.
    if (tid && rid) await client.runs.cancel(tid, rid, true).catch((e) => addError(`Could not stop the run: ${describeError(e)}`));
    await stream.stop();
    setNotice("Stopped.");
    setEnded({ stopped: true });
    setThreadsKey((k) => k + 1); // the thread's status in the list: idle again, not "busy"
    setFilesKey((k) => k + 1);
  };

  const restoreStep = (checkpointId: string) => {
    const tid = threadRef.current;
    if (!tid) return;
    restoreFiles(tid, checkpointId).then(
      (r) => {
        setNotice(`Files restored to that step: ${r.written.length} written, ${r.removed.length} removed.`);
        setFilesKey((k) => k + 1);
      },
      (e) => addError(`Could not restore the files: ${describeError(e)}`),
    );
  };

  const runFromStep = (checkpointId: string) => {
    const tid = threadRef.current;
    if (!tid) return;
    // the gateway puts that step's files back before the run starts
    stream.submit(undefined, { ...submitOptions(), checkpoint: { checkpoint_id: checkpointId, checkpoint_ns: "", checkpoint_map: {} } });
  };

  const stopTask = (taskId: string) => {
    const tid = threadRef.current;
    if (!tid) return;
    cancelSubagent(tid, taskId).then(
      () => setNotice("Stopping that sub-agent; the run goes on."),
      (e) => addError(`Could not stop the sub-agent: ${describeError(e)}`),
    );
  };

  const upload = async (files: File[]) => {
    const total = files.reduce((n, f) => n + f.size, 0);
    if (maxUpload != null && total > maxUpload) {
      addError(`Not uploaded: ${files.map((f) => f.name).join(", ")} (${megabytes(total)}) is over the gateway's ${megabytes(maxUpload)} limit per upload`);
      return;
    }
    try {
      let tid = threadRef.current;
      if (!tid) {
        tid = (await client.threads.create()).thread_id;
        setThreadId(tid);
        setThreadsKey((k) => k + 1);
      }
      const saved = await uploadFiles(tid, files);
      setNotice(`Uploaded ${saved.map((f) => f.path).join(", ")}`);
      setFilesKey((k) => k + 1);
    } catch (e) {
      addError(`Upload failed: ${describeError(e)}`);
    }
  };

  const selectThread = (id: string | null) => {
    runId.current = null;
    setEnded({});
    setNotice("");
    setThreadId(id);
  };

  // A thread goes on with the agent it was started on; picking an agent starts a new thread.
  useEffect(() => {
    if (!threadId) return;
    client.threads
      .get(threadId)
      .then((t) => {
        const on = (t.metadata as { assistant_id?: unknown } | null)?.assistant_id;
        if (typeof on === "string") setAgent(on);
      })
      .catch(() => undefined);
  }, [threadId]);
  const pickAgent = (id: string) => {
    setAgent(id);
    selectThread(null);
  };

  const agentMenu = useMemo(() => agentChoices(agents, ASSISTANT_ID), [agents]);

  const interrupt = stream.isLoading ? undefined : stream.interrupt;
  const firstHuman = messages.find((m) => m.type === "human");
  const title = values?.title ?? (firstHuman ? messageText(firstHuman).slice(0, 60) : "New thread");

  return (
    <LangContext.Provider value={lang}>
      <div className="app">
        <aside className="sidebar">
          <div className="brand">Herdsman</div>
          <AgentPicker value={agent} onChange={pickAgent} onAgents={setAgents} onError={addError} reloadKey={threadsKey} />
          {agent === ASSISTANT_ID && <ModelPicker value={model} onChange={setModel} onError={addError} reloadKey={threadsKey} />}
          <ThreadList current={threadId} refreshKey={threadsKey} onSelect={selectThread} onError={addError} agents={agents} />
          <ScheduledPanel threadId={threadId} refreshKey={threadsKey} onSelect={selectThread} onError={addError} />
          <Settings />
        </aside>
        <main className="chat">
          <header className="chat-head">
            <span className="chat-title" data-testid="thread-title">{title}</span>
            <RunBadge running={stream.isLoading} messages={messages} writing={writing ? writing.name ?? "" : null} />
            <button className="trace-toggle" aria-pressed={traceOpen} onClick={() => setTraceOpen((o) => !o)} data-testid="trace-toggle">
              Trace
            </button>
            <button className="trace-toggle preview-toggle" aria-pressed={previewOpen} data-testid="preview-toggle"
              onClick={() => { setPreviewOpen((o) => !o); setAnnounced((a) => (a ? { ...a, seen: true } : a)); }}>
              Preview
              {announced && announced.thread === threadId && !announced.seen && !previewOpen && (
                <span className="trace-badge preview-badge" data-testid="preview-badge" title={`A server started listening on port ${announced.port}`}>
                  {announced.port}
                </span>
              )}
            </button>
          </header>
          <RunDetail running={stream.isLoading} messages={messages} tasks={tasks} draft={writing} estimate={estimate}
            outcome={messages.length ? runOutcome({ ...ended, stopped: ended.stopped || stoppedAnswer(messages), unresolved: values?.completion_unresolved, messages }, lang) : null} />
          {traceOpen && (
            <TraceView
              threadId={threadId}
              refreshKey={filesKey}
              onClose={() => setTraceOpen(false)}
              onError={addError}
              onOpenFile={(path) => setShownFile((f) => ({ path, n: (f?.n ?? 0) + 1 }))}
              busy={stream.isLoading}
              onRestore={restoreStep}
              onRunFrom={runFromStep}
            />
          )}
          {previewOpen && (
            <PreviewPanel threadId={threadId} refreshKey={filesKey} onClose={() => setPreviewOpen(false)} onError={addError}
              announced={announced && announced.thread === threadId ? announced : null} />
          )}
          {!gatewayUp && <div className="error" role="alert" data-testid="gateway-down">The gateway is not answering; retrying…</div>}
          <ErrorBanner errors={errors} onDismiss={(i) => setErrors((es) => es.filter((_, j) => j !== i))} />
          {messages.length === 0 && !stream.isLoading && !previewOpen && (
            <StartScreen
              skills={skills}
              agents={agentMenu}
              current={agent}
              onAgent={pickAgent}
              onExample={(text, skill) => setFill((f) => ({ text, n: (f?.n ?? 0) + 1, skills: skill ? [skill] : [] }))}
            />
          )}
          <MessageList messages={messages} busy={stream.isLoading} actions={actions} tasks={tasks} onStopTask={stopTask}
            unresolved={values?.completion_unresolved}>
            {writing && <DraftCall draft={writing} />}
            {interrupt && <InterruptPanel key={interrupt.id ?? "i"} value={interrupt.value} onResume={resume} />}
          </MessageList>
          {notice && <div className="notice" data-testid="notice">{notice}</div>}
          <Composer running={stream.isLoading} onSend={send} onStop={stop} onFiles={upload} skills={[...skills, ...agentMenu]} onAgent={pickAgent} fill={fill} />
        </main>
        <FilesPanel threadId={threadId} written={written} refreshKey={filesKey} running={stream.isLoading} onError={addError} show={shownFile}>
          <TodoList todos={values?.todos} />
        </FilesPanel>
      </div>
    </LangContext.Provider>
  );
}
