// Example tool lists and JSON Schemas for the editors. Every schema bounds its strings, numbers and
// arrays, so that even a small random model's constrained reply ends within ~150 tokens.

export const TOOL_EXAMPLES = {
  "Weather": [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "Current weather for a city",
        parameters: {
          type: "object",
          properties: {
            city: { type: "string", description: "City name, e.g. Paris" },
            unit: { type: "string", enum: ["celsius", "fahrenheit"] },
          },
          required: ["city"],
        },
      },
    },
  ],
  "Search and calculator": [
    {
      type: "function",
      function: {
        name: "web_search",
        description: "Search the web and return the top results",
        parameters: {
          type: "object",
          properties: { query: { type: "string" }, max_results: { type: "integer", minimum: 1, maximum: 10 } },
          required: ["query"],
        },
      },
    },
    {
      type: "function",
      function: {
        name: "calculate",
        description: "Evaluate an arithmetic expression",
        parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
      },
    },
  ],
};

export const SCHEMA_EXAMPLES = {
  "Ticket triage": {
    type: "object",
    properties: {
      summary: { type: "string", maxLength: 40 },
      severity: { enum: ["low", "medium", "high", "critical"] },
      needs_human: { type: "boolean" },
    },
    required: ["summary", "severity", "needs_human"],
    additionalProperties: false,
  },
  "Person": {
    type: "object",
    properties: {
      name: { type: "string", minLength: 1, maxLength: 30 },
      age: { type: "integer", minimum: 0, maximum: 130 },
      role: { enum: ["admin", "editor", "viewer"] },
    },
    required: ["name", "age"],
    additionalProperties: false,
  },
  "Shopping list": {
    type: "object",
    properties: {
      items: {
        type: "array",
        minItems: 1,
        maxItems: 4,
        items: {
          type: "object",
          properties: { name: { type: "string", maxLength: 20 }, quantity: { type: "integer", minimum: 1, maximum: 99 } },
          required: ["name", "quantity"],
          additionalProperties: false,
        },
      },
    },
    required: ["items"],
    additionalProperties: false,
  },
  "Sentiment (enum)": {
    type: "object",
    properties: { label: { enum: ["positive", "neutral", "negative"] }, confidence: { enum: [0.5, 0.75, 1] } },
    required: ["label", "confidence"],
    additionalProperties: false,
  },
};
