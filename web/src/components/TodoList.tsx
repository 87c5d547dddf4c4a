/** The agent's plan: the `todos` of the thread state (LangChain's todo list middleware). */
export interface Todo {
  content: string;
  status: "pending" | "in_progress" | "completed";
}

const MARK: Record<Todo["status"], string> = { pending: "○", in_progress: "◐", completed: "●" };

export function TodoList({ todos }: { todos: Todo[] | undefined }) {
  if (!todos?.length) return null;
  const done = todos.filter((t) => t.status === "completed").length;
  return (
    <section className="todos" data-testid="todos">
      <h3>Plan <span className="todo-count">{done}/{todos.length}</span></h3>
      <ul>
        {todos.map((t, i) => (
          <li key={i} className={`todo todo-${t.status}`}>
            <span aria-hidden>{MARK[t.status] ?? "○"}</span> {t.content}
          </li>
        ))}
      </ul>
    </section>
  );
}
