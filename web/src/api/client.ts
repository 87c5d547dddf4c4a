/** The LangGraph SDK client for the gateway this page is served by (its LangGraph API lives at /api/langgraph). */
import { Client } from "@langchain/langgraph-sdk";
import { getApiKey } from "./key";

export const API_URL = `${window.location.origin}/api/langgraph`;
export const ASSISTANT_ID = "lead_agent";

// A null key keeps the SDK from looking for one elsewhere; with a key it sends x-api-key.
export const client = new Client({ apiUrl: API_URL, apiKey: getApiKey() ?? null });
