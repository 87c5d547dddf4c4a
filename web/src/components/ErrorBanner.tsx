/** Errors the page hit (gateway down, a failed run, a failed upload), each dismissible. */
export function ErrorBanner({ errors, onDismiss }: { errors: string[]; onDismiss: (i: number) => void }) {
  if (errors.length === 0) return null;
  return (
    <div className="errors" role="alert" data-testid="errors">
      {errors.map((e, i) => (
        <div key={i} className="error">
          <span>{e}</span>
          <button onClick={() => onDismiss(i)} aria-label="Dismiss">×</button>
        </div>
      ))}
    </div>
  );
}
